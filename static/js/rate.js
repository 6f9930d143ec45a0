/* The rating screen: the minimum-time countdown, the keys 1-5 (choose), Enter (submit) and S (skip
a game pair), the chosen level's words on a phone, and the next pair's image fetched ahead.

The countdown starts when the image has loaded, so a slow connection never unlocks Submit over
a half-painted picture: the rater gets the full minimum time (data-min-ms) with the image on
screen, and never less than the server's own floor (its min_submit_at minus its now), which the
server checks again on submit. Both are counted with performance.now(), a monotonic clock: the
rater's wall clock plays no part.
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
  var image = document.getElementById("pair-image");
  var chosen = document.getElementById("choice-chosen");
  var skip = document.getElementById("skip-pair");

  var rendered = performance.now();
  var serverWait = Math.max(0, Number(form.dataset.minSubmitMs) - Number(form.dataset.serverNowMs)) || 0;
  var minimum = Number(form.dataset.minMs) || 0;
  var ready = false;
  var counting = false;

  function becomeReady() {
    ready = true;
    submit.disabled = false;
    countdown.classList.add("is-ready");
    bar.style.width = "100%";
    seconds.textContent = "Ready";
    status.textContent = "You can submit your rating now.";
  }

  function startCountdown(message) {
    if (counting) {
      return;
    }
    counting = true;
    var started = performance.now();
    var wait = Math.max(minimum, serverWait - (started - rendered));
    if (message) {
      status.textContent = message;
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
      tick();
    } else {
      becomeReady();
    }
  }

  // Fetch the next pair's image while this one is looked at; the browser picks the same copy
  // from srcset as it will on the next screen, and keeps it in its cache.
  function prefetchNext() {
    if (!form.dataset.nextSrc) {
      return;
    }
    var next = new Image();
    next.sizes = image.sizes;
    if (form.dataset.nextSrcset) {
      next.srcset = form.dataset.nextSrcset;
    }
    next.src = form.dataset.nextSrc;
  }

  submit.disabled = true;
  seconds.textContent = "…";
  if (image.complete && image.naturalWidth > 0) {
    startCountdown();
    prefetchNext();
  } else {
    image.addEventListener("load", function () {
      startCountdown();
      prefetchNext();
    });
    image.addEventListener("error", function () {
      startCountdown("The image did not load. If it stays broken, report the pair below.");
    });
  }

  function showChosen() {
    var radio = form.querySelector('input[name="value"]:checked');
    if (chosen && radio) {
      var words = radio.parentElement.querySelector(".choice-text");
      chosen.textContent = radio.value + ": " + (words ? words.textContent : "");
    }
  }

  function choose(value) {
    var radio = form.querySelector('input[name="value"][value="' + value + '"]');
    if (radio) {
      radio.checked = true;
      radio.focus();
      showChosen();
    }
  }

  form.addEventListener("change", showChosen);

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
    } else if ((event.key === "s" || event.key === "S") && skip) {
      event.preventDefault();
      skip.click();
    }
  });
})();
