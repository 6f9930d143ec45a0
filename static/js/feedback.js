/* Feedback screens: announce the result to screen readers, and go on with N or Enter. */
(function () {
  "use strict";

  var next = document.getElementById("continue");
  var announce = document.getElementById("feedback-announce");

  // A live region only speaks when its content changes after load.
  if (announce) {
    window.setTimeout(function () {
      announce.textContent = announce.dataset.text;
    }, 300);
  }
  if (!next) {
    return;
  }
  window.MoreBelow.watch(next.closest(".actions.next"));
  if (!document.querySelector(".dispute[open]")) {
    next.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (window.RatingKeys.ignored(event)) {
      return;
    }
    var isN = event.key === "n" || event.key === "N";
    if (isN || (event.key === "Enter" && !window.RatingKeys.activatesByItself(event.target))) {
      event.preventDefault();
      window.location.assign(next.href);
    }
  });
})();
