/* The Rating Guide dialog: opened by its button or the G key, closed by Escape or its button. */
(function () {
  "use strict";

  var dialog = document.getElementById("guide");
  if (!dialog || typeof dialog.showModal !== "function") {
    return; // the <noscript> link to the introduction stays the way to the scale
  }
  var opener = null;

  function open() {
    if (dialog.open) {
      return;
    }
    opener = document.activeElement;
    dialog.showModal();
  }

  document.querySelectorAll("[data-guide-open]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", open);
  });

  // Focus goes back where it was (the chosen rating, the Continue link), so play resumes at once.
  dialog.addEventListener("close", function () {
    if (opener && opener !== document.body && typeof opener.focus === "function") {
      opener.focus();
    }
  });
  // A click on the backdrop (outside the guide's body) closes it.
  dialog.addEventListener("click", function (event) {
    if (event.target === dialog) {
      dialog.close();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "g" && event.key !== "G") {
      return;
    }
    if (dialog.open) {
      event.preventDefault();
      dialog.close();
      return;
    }
    if (window.RatingKeys.ignored(event)) {
      return;
    }
    event.preventDefault();
    open();
  });
})();
