/* The rating screen: the minimum-time countdown and the keys 1-5 (choose) and Enter (submit).

The wait is what the server rendered (its min_submit_at minus its own now), counted down with
performance.now(), a monotonic clock: the rater's wall clock plays no part, and the server
checks the delay again on submit.
*/
(function () {
  "use strict";

  var form = document.getElementById("rating-form");
  if (!form) {
    return;
  }
  var submit = document.getElementById("submit-rating");
  var status = document.getElementById("countdown-status");
  var seconds = document.getElementById("countdown-seconds");
  var bar = document.getElementById("countdown-bar");
  var countdown = document.getElementById("countdown");

  var wait = Math.max(0, Number(form.dataset.minSubmitMs) - Number(form.dataset.serverNowMs)) || 0;
  var started = performance.now();
  var ready = false;

  function becomeReady() {
    ready = true;
    submit.disabled = false;
    countdown.classList.add("is-ready");
    bar.style.width = "100%";
    seconds.textContent = "Ready";
    status.textContent = "You can submit your rating now.";
  }

  function tick() {
    var left = wait - (performance.now() - started);
    if (left <= 0) {
      becomeReady();
      return;
    }
    seconds.textContent = (left / 1000).toFixed(1) + " s";
    bar.style.width = (100 * (1 - left / wait)).toFixed(1) + "%";
    window.setTimeout(tick, 100);
  }

  if (wait > 0) {
    submit.disabled = true;
    tick();
  } else {
    becomeReady();
  }

  function choose(value) {
    var radio = form.querySelector('input[name="value"][value="' + value + '"]');
    if (radio) {
      radio.checked = true;
      radio.focus();
    }
  }

  function trySubmit() {
    if (!ready) {
      status.textContent = "Not yet: wait until the countdown ends, then press Enter.";
      return;
    }
    if (!form.querySelector('input[name="value"]:checked')) {
      status.textContent = "Choose a rating first: press 1 to 5.";
      return;
    }
    form.requestSubmit(submit);
  }

  // One submission per page: a second Enter while the first is on its way does nothing.
  form.addEventListener("submit", function () {
    window.setTimeout(function () {
      submit.disabled = true;
    }, 0);
  });

  // Back from the feedback screen, a page restored from the back-forward cache would show a
  // pair already rated: ask the server for the current one instead.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      window.location.reload();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (window.RatingKeys.ignored(event)) {
      return;
    }
    if (/^[1-5]$/.test(event.key)) {
      event.preventDefault();
      choose(event.key);
    } else if (event.key === "Enter" && !window.RatingKeys.activatesByItself(event.target)) {
      event.preventDefault();
      trySubmit();
    }
  });
})();
