/* Feedback whose end lies under the sticky "Next" bar (a long explanation, a phone): the bar says
   so ("More below") and a press scrolls the rest into view, so that nobody goes on without having
   seen the sentence they most need. Shared by the feedback page and the rating page's in-place
   feedback (a new bar with each feedback: the one watched is the latest); the bar stays in view.
   An opened dispute form is brought into view the same way. */
(function () {
  "use strict";

  var MARGIN = 8; // px of air between the last line read and the bar
  var current = null; // { bar, button }

  // How far what the panel shows before the bar (the verdict, the explanation) reaches under it.
  function hiddenBy(bar) {
    var bottom = 0;
    for (var element = bar.previousElementSibling; element; element = element.previousElementSibling) {
      if (element.getClientRects().length) {
        bottom = Math.max(bottom, element.getBoundingClientRect().bottom);
      }
    }
    return bottom + MARGIN - bar.getBoundingClientRect().top;
  }

  function update() {
    if (current) {
      current.button.hidden = !current.bar.isConnected || hiddenBy(current.bar) <= MARGIN;
    }
  }

  function watch(bar) {
    if (!bar) {
      return;
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "link more-below";
    button.textContent = "More below ↓";
    button.addEventListener("click", function () {
      window.scrollBy({ top: hiddenBy(bar), behavior: "smooth" });
    });
    bar.appendChild(button);
    current = { bar: bar, button: button };
    update();
  }

  // "Dispute this score" opens its form under the feedback, often below the fold: the form is
  // brought into view whole and its comment field takes the focus. (A toggle does not bubble: it
  // is heard in the capture phase, for the page's form and the one of each feedback in place.)
  document.addEventListener(
    "toggle",
    function (event) {
      var details = event.target;
      if (!details.matches || !details.matches("details.dispute") || !details.open) {
        return;
      }
      var form = details.querySelector("form");
      if (form && form.getBoundingClientRect().bottom > window.innerHeight) {
        var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
        form.scrollIntoView({ block: "end", behavior: still ? "auto" : "smooth" });
      }
      var field = details.querySelector("textarea, input:not([type=hidden])");
      if (field) {
        field.focus({ preventScroll: true });
      }
    },
    true
  );

  window.addEventListener("scroll", update, { passive: true });
  window.addEventListener("resize", update);
  window.addEventListener("load", update); // images and fonts may move the text as they load
  window.MoreBelow = { watch: watch };
})();
