/* The rating screen: the minimum-time countdown, the keys 1-5 (choose), Enter (submit) and S (skip
a game pair), the chosen level's words on a phone, the next pair's image fetched ahead, and the
rating in one request with its feedback and the next pair shown in place.

The countdown starts when the image has loaded, so a slow connection never unlocks Submit over
a half-painted picture: the rater gets the full minimum time (data-min-ms) with the image on
screen, and never less than the server's own floor (its min_submit_at minus its now), which the
server checks again on submit. Both are counted with performance.now(), a monotonic clock: the
rater's wall clock plays no part.

With a script, Submit posts the form to /play/submit/ (ratinggame.play): the answer is the
feedback, shown in place of the choices, and the next pair, served by the server at that moment
(its floor counts from then, so the time spent on the feedback counts); "Next pair" (N, Enter)
shows it at once, its image fetched while the feedback was read. Each screen gets its own URL
(history.pushState): Back, Forward and a reload ask the server for that URL, which shows what it
holds there (a rated pair's feedback, the pair open now), never a stale form. Whatever the
in-place screen does not show (the end of a stage, ...) comes as a page to open. Without a
script the form posts as a page.
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

  var panel = document.getElementById("feedback-panel");
  var side = form.querySelector(".rate-side");
  var tools = form.querySelector(".pair-tools");
  var caption = document.getElementById("caption");
  var announce = document.getElementById("feedback-announce");
  var inPlace = Boolean(window.fetch && window.history.pushState && panel && form.dataset.submitUrl);

  var rendered = performance.now();
  var serverWait = Math.max(0, Number(form.dataset.minSubmitMs) - Number(form.dataset.serverNowMs)) || 0;
  var minimum = Number(form.dataset.minMs) || 0;
  var ready = false;
  var counting = false;
  var sending = false;
  var upcoming = null; // the next pair, while its feedback is shown

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
    delete form.dataset.nextSrc; // once: the images shown in place load this listener again
  }

  submit.disabled = true;
  seconds.textContent = "…";
  // Also the next pairs' images, shown in place: the countdown waits for each.
  image.addEventListener("load", function () {
    startCountdown();
    prefetchNext();
  });
  image.addEventListener("error", function () {
    startCountdown("The image did not load. If it stays broken, report the pair below.");
  });
  if (image.complete && image.naturalWidth > 0) {
    startCountdown();
    prefetchNext();
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

  // One submission per pair: a second Enter while the first is on its way does nothing.
  form.addEventListener("submit", function (event) {
    if (!inPlace) {
      window.setTimeout(function () {
        submit.disabled = true;
      }, 0);
      return;
    }
    event.preventDefault();
    if (sending) {
      return;
    }
    sending = true;
    submit.disabled = true;
    send();
  });

  function send() {
    var received = 0;
    window
      .fetch(form.dataset.submitUrl, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": form.elements.csrfmiddlewaretoken.value },
      })
      .then(function (response) {
        received = performance.now();
        return response.json().then(function (body) {
          return { ok: response.ok, body: body };
        });
      })
      .then(function (answer) {
        var body = answer.body;
        if (body.page) {
          window.location.assign(body.page);
        } else if (answer.ok && body.feedback) {
          showFeedback(body, received);
        } else {
          refused(body.message || "The rating was not taken. Please try again.");
        }
      })
      .catch(function () {
        // No answer (the network, or not JSON): send it as a page, as without a script. A rating
        // the server stored already is shown, not stored twice.
        inPlace = false;
        form.requestSubmit(submit);
      });
  }

  // "Skip this pair" asked without leaving the page: a refused skip keeps the pair, its countdown
  // and the choice made, and says why (as a page, the refusal reloaded the screen); a skip taken
  // opens the next pair's page, as without a script.
  var skipForm = document.getElementById("skip-form");
  if (skipForm && inPlace) {
    skipForm.addEventListener("submit", function (event) {
      event.preventDefault();
      if (sending) {
        return; // a rating of this pair is on its way: its answer decides what comes next
      }
      window
        .fetch(skipForm.action, {
          method: "POST",
          body: new FormData(skipForm),
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        })
        .then(function (response) {
          return response.json();
        })
        .then(function (body) {
          if (body.page) {
            window.location.assign(body.page);
          } else {
            say(body.message || "The pair was not skipped. Please try again.");
          }
        })
        .catch(function () {
          skipForm.submit();
        });
    });
  }

  function refused(message) {
    sending = false;
    submit.disabled = !ready;
    say(message);
  }

  // A refusal's reason above the choices (the pair, its countdown and the choice stay).
  function say(message) {
    var alert = document.getElementById("rate-error");
    if (!alert) {
      alert = document.createElement("div");
      alert.className = "alert error";
      alert.id = "rate-error";
      alert.setAttribute("role", "alert");
      side.insertBefore(alert, side.firstChild);
    }
    alert.textContent = message;
  }

  function showFeedback(body, received) {
    upcoming = body.next;
    upcoming.received = received;
    panel.innerHTML = body.feedback.html;
    // The panel's forms (the dispute) come without a CSRF token: they take the page's.
    panel.querySelectorAll("form").forEach(function (panelForm) {
      panelForm.appendChild(form.elements.csrfmiddlewaretoken.cloneNode());
    });
    // The caption rated stays in view beside its feedback, as on the feedback page.
    var rated = caption.cloneNode(true);
    rated.removeAttribute("id");
    panel.insertBefore(rated, panel.querySelector(".fb-grid") || panel.firstChild.nextSibling);
    panel.className = "rate-side feedback-main points-" + body.feedback.points_class;
    side.hidden = true;
    tools.hidden = true;
    panel.hidden = false;
    window.history.pushState({ screen: "feedback" }, "", body.feedback.url);
    announce.textContent = body.feedback.announce;
    // The title's points, level and window are the rater's after this rating, as the panel says.
    document.getElementById("play-title").innerHTML = body.feedback.title_html;
    var next = document.getElementById("continue");
    next.addEventListener("click", function (event) {
      event.preventDefault();
      showNext();
    });
    next.focus();
    window.MoreBelow.watch(next.closest(".actions.next"));
    // Fetch the next image now, as the page would show it (same sizes, same copy from srcset).
    var ahead = new Image();
    ahead.sizes = image.sizes;
    ahead.srcset = upcoming.image.srcset;
    ahead.src = upcoming.image.src;
  }

  function showNext() {
    var next = upcoming;
    if (!next) {
      return;
    }
    upcoming = null;
    document.getElementById("play-title").innerHTML = next.title_html;
    image.removeAttribute("srcset");
    image.width = next.image.width;
    image.height = next.image.height;
    if (next.image.srcset) {
      image.srcset = next.image.srcset;
    }
    image.src = next.image.src;
    while (caption.lastChild && caption.lastChild !== caption.firstElementChild) {
      caption.removeChild(caption.lastChild);
    }
    caption.appendChild(document.createTextNode(next.caption));
    form.querySelector(".original-link").href = next.original_url;
    // "Skip this pair" only while a skip is allowed; otherwise the note says from which pair.
    if (skip) {
      skip.hidden = !next.skip_open;
      document.getElementById("skip-key").hidden = !next.skip_open;
      document.getElementById("skip-note").textContent =
        !next.skip_open && next.skip_from ? "Skip: from game pair " + next.skip_from : "";
    }
    document.querySelectorAll('input[name="assignment"]').forEach(function (input) {
      input.value = next.assignment_id;
    });
    form.querySelectorAll('input[name="value"]').forEach(function (radio) {
      radio.checked = false;
    });
    if (chosen) {
      chosen.textContent = "";
    }
    var alert = document.getElementById("rate-error");
    if (alert) {
      alert.remove();
    }
    var report = document.getElementById("report");
    report.open = false;
    document.getElementById("report-reason").value = "";
    document.getElementById("report-text").value = "";
    panel.hidden = true;
    panel.innerHTML = "";
    side.hidden = false;
    tools.hidden = false;
    window.history.pushState({ screen: "pair" }, "", next.url);
    // The server's floor for this pair counts from its serve, when the rating before it was taken.
    ready = false;
    counting = false;
    sending = false;
    submit.disabled = true;
    rendered = next.received;
    serverWait = next.wait_ms;
    minimum = 0;
    status.textContent = "";
    countdown.classList.remove("is-ready");
    bar.style.width = "0%";
    if (image.complete && image.naturalWidth > 0) {
      startCountdown();
    }
    // The new caption takes the focus (read out by a screen reader), not a choice that would look chosen.
    caption.setAttribute("tabindex", "-1");
    caption.focus();
  }

  if (inPlace) {
    window.history.replaceState({ screen: "pair" }, "", form.dataset.pairUrl);
    // Back and Forward between screens shown in place: the server shows what it holds at that URL.
    window.addEventListener("popstate", function () {
      window.location.reload();
    });
  }

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
    if (upcoming) {
      // The feedback is on screen: N or Enter shows the next pair.
      var isN = event.key === "n" || event.key === "N";
      if (isN || (event.key === "Enter" && !window.RatingKeys.activatesByItself(event.target))) {
        event.preventDefault();
        showNext();
      }
      return;
    }
    if (/^[1-5]$/.test(event.key)) {
      event.preventDefault();
      choose(event.key);
    } else if (event.key === "Enter" && !window.RatingKeys.activatesByItself(event.target)) {
      event.preventDefault();
      trySubmit();
    } else if ((event.key === "s" || event.key === "S") && skip && !skip.hidden) {
      event.preventDefault();
      skip.click();
    }
  });
})();
