/* The Rating Guide: opened by its button or the G key, closed by G, Escape or its button.

On a wide screen it opens as a side panel on the right (a non-modal dialog), so the image on the
left stays in view and the keys 1-5 still choose a rating; on a narrow screen, where a panel
would cover everything anyway, as a modal dialog.
*/
(function () {
  "use strict";

  var dialog = document.getElementById("guide");
  if (!dialog || typeof dialog.showModal !== "function") {
    return; // the <noscript> link to the introduction stays the way to the scale
  }
  var wide = window.matchMedia("(min-width: 60rem)");
  var opener = null;

  function open() {
    if (dialog.open) {
      return;
    }
    opener = document.activeElement;
    dialog.classList.toggle("side", wide.matches);
    if (wide.matches) {
      dialog.show();
    } else {
      dialog.showModal();
    }
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
  // A click on the backdrop (outside the guide's body) closes the modal guide.
  dialog.addEventListener("click", function (event) {
    if (event.target === dialog) {
      dialog.close();
    }
  });

  document.addEventListener("keydown", function (event) {
    var isG = event.key === "g" || event.key === "G";
    if (dialog.open && (event.key === "Escape" || (isG && !window.RatingKeys.typing(event)))) {
      // Escape closes a modal dialog by itself, not a side panel.
      event.preventDefault();
      dialog.close();
      return;
    }
    if (!isG || window.RatingKeys.ignored(event)) {
      return;
    }
    event.preventDefault();
    open();
  });
})();
