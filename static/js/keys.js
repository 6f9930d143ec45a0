/* Shared by the rating and feedback pages: which key presses belong to the page's shortcuts. */
(function () {
  "use strict";

  var TYPING = /^(INPUT|TEXTAREA|SELECT)$/;

  function typing(event) {
    var target = event.target;
    return Boolean(target && (target.isContentEditable || (TYPING.test(target.tagName) && target.type !== "radio")));
  }

  window.RatingKeys = {
    typing: typing,
    // Shortcuts never fire with a modifier, while typing in a text field, or behind the guide when
    // it is a modal dialog (a phone); beside the guide's side panel (a laptop) they still work.
    ignored: function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event)) {
        return true;
      }
      var guide = document.getElementById("guide");
      return Boolean(guide && guide.open && guide.matches(":modal"));
    },
    // Enter on a focused link or button already does what it says: leave it to the browser.
    activatesByItself: function (target) {
      return Boolean(target && (target.tagName === "A" || target.tagName === "BUTTON" || target.tagName === "SUMMARY"));
    },
  };
})();
