// An import job's page: while the job waits or runs, poll its status and move the progress bar;
// once it has ended, reload the page, which then shows the report and any refused rows, or why
// the import failed.
(function () {
  "use strict";
  var POLL_MS = 2000;
  var ACTIVE = { queued: true, running: true };
  var box = document.querySelector(".import-job");
  if (!box || !ACTIVE[box.dataset.status]) { return; }
  var bar = document.getElementById("import-progress");
  var message = document.getElementById("import-message");

  function poll() {
    fetch(box.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("status " + response.status); }
        return response.json();
      })
      .then(function (data) {
        if (!ACTIVE[data.status]) { window.location.reload(); return; }
        bar.value = data.progress;
        var repeats = !data.message || data.message === data.status_display;  // "Queued: Queued"
        var text = data.status_display + (repeats ? "" : ": " + data.message);
        if (message.textContent !== text) { message.textContent = text; }
        window.setTimeout(poll, POLL_MS);
      })
      .catch(function () { window.setTimeout(poll, POLL_MS * 5); });
  }
  window.setTimeout(poll, POLL_MS);
})();
