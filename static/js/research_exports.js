// Dataset exports page: polls the status of queued and running exports and updates their
// <progress> bar, message and download link. Without JavaScript the page shows the state at
// load time (reload to refresh).
(function () {
  "use strict";
  var POLL_MS = 2000;
  var ACTIVE = { queued: true, running: true };

  function update(row, data) {
    var bar = row.querySelector("progress");
    var message = row.querySelector(".export-message");
    var download = row.querySelector(".export-download");
    bar.value = data.progress;
    bar.textContent = Math.round(data.progress * 100) + "%";
    // A failure says why, and a bar stopped part-way would say it was still going: no bar then.
    bar.hidden = data.status === "failed";
    var text = data.status_display;
    if (data.status === "failed") {
      text = "Failed: " + (data.error || "no reason was recorded.");
    } else if (data.message && data.status !== "done" && data.message !== data.status_display) {
      text += ": " + data.message;
    }
    if (message.textContent !== text) { message.textContent = text; }
    if (data.download_url && !download.querySelector("a")) {
      var link = document.createElement("a");
      link.href = data.download_url;
      link.textContent = "export-" + data.id + ".zip";
      download.textContent = "";
      download.appendChild(link);
    }
    row.dataset.status = data.status;
  }

  function poll(row) {
    fetch(row.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("status " + response.status); }
        return response.json();
      })
      .then(function (data) {
        update(row, data);
        if (ACTIVE[data.status]) { window.setTimeout(function () { poll(row); }, POLL_MS); }
      })
      .catch(function () {
        // A dropped connection or a restarting server: try again, more slowly.
        window.setTimeout(function () { poll(row); }, POLL_MS * 5);
      });
  }

  document.querySelectorAll("tr.export-job").forEach(function (row) {
    if (ACTIVE[row.dataset.status]) { poll(row); }
  });
})();
