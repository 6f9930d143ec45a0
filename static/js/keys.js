/* Shared by the rating and feedback pages: which key presses belong to the page's shortcuts. */
(function () {
  "use strict";

  var TYPING = /^(INPUT|TEXTAREA|SELECT)$/;

  window.RatingKeys = {
    // Shortcuts never fire with a modifier, while typing in a text field, or behind the open guide.
    ignored: function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
        return true;
      }
      var target = event.target;
      if (target && (target.isContentEditable || (TYPING.test(target.tagName) && target.type !== "radio"))) {
        return true;
      }
      var guide = document.getElementById("guide");
      return Boolean(guide && guide.open);
    },
    // Enter on a focused link or button already does what it says: leave it to the browser.
    activatesByItself: function (target) {
      return Boolean(target && (target.tagName === "A" || target.tagName === "BUTTON" || target.tagName === "SUMMARY"));
    },
  };
})();
