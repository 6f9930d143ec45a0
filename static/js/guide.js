/* The Rating Guide: opened and closed by its button (a toggle) or the G key; Escape closes it too,
and focus goes back where it was.

On a wide screen it opens as a side panel on the right (a non-modal dialog) and the page makes room
for it (body.guide-beside narrows everything left of the panel): the image shrinks, while the
caption, the five choices and Submit stay in view and clickable, and the keys 1-5 and Enter still
work. On a narrow screen there is no room beside it: it opens as a modal dialog over the page, and
its Close button (kept at its top) or Escape brings the choices back.
*/
(function () {
  "use strict";

  var dialog = document.getElementById("guide");
  if (!dialog || typeof dialog.showModal !== "function") {
    return; // the <noscript> link to the introduction stays the way to the scale
  }
  var wide = window.matchMedia("(min-width: 60rem)");
  var buttons = document.querySelectorAll("[data-guide-open]");
  var opener = null;

  function showState(open) {
    buttons.forEach(function (button) {
      button.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  function open() {
    if (dialog.open) {
      return;
    }
    opener = document.activeElement;
    var side = wide.matches;
    dialog.classList.toggle("side", side);
    document.body.classList.toggle("guide-beside", side);
    if (side) {
      dialog.show();
    } else {
      dialog.showModal();
    }
    showState(true);
  }

  buttons.forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      if (dialog.open) {
        dialog.close();
      } else {
        open();
      }
    });
  });
  showState(false);

  // Focus goes back where it was (the chosen rating, the Continue link), so play resumes at once.
  dialog.addEventListener("close", function () {
    document.body.classList.remove("guide-beside");
    showState(false);
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
