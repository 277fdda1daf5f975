// sluice dashboard: progressive enhancement only. Pages work without it;
// it draws the Metrics charts, reloads Activity when approvals change and
// logs in with the token of a login link (/admin/login#token=...).
(function () {
  "use strict";
  var page = document.body.getAttribute("data-page");

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (r) {
      if (!r.ok) { throw new Error(url + ": " + r.status); }
      return r.json();
    });
  }

  function drawCharts() {
    var box = document.getElementById("charts");
    if (!box || typeof uPlot === "undefined") { return; }
    getJSON(box.getAttribute("data-src")).then(function (m) {
      var byServer = {};
      (m.series || []).forEach(function (s) { byServer[s.server] = s; });
      box.querySelectorAll(".chart").forEach(function (el) {
        var s = byServer[el.getAttribute("data-server")];
        if (!s) { return; }
        var rate = el.getAttribute("data-kind") === "rate";
        var opts = {
          width: 420, height: 150,
          title: rate ? "calls/s" : "latency ms (p50, p99)",
          scales: { x: { time: true } },
          series: rate
            ? [{}, { label: "calls/s", stroke: "#2456d6", fill: "rgba(36,86,214,0.12)" }]
            : [{}, { label: "p50", stroke: "#1b7f3b" }, { label: "p99", stroke: "#b3261e" }],
          legend: { show: true }
        };
        var data = rate ? [s.minutes, s.callsPerSecond] : [s.minutes, s.p50Ms, s.p99Ms];
        el.textContent = "";
        new uPlot(opts, data, el);
        el.setAttribute("data-drawn", "1");
      });
    }).catch(function (e) { box.setAttribute("data-error", String(e)); });
  }

  function watchApprovals() {
    var box = document.getElementById("pending");
    if (!box) { return; }
    var shown = (box.getAttribute("data-ids") || "").trim().split(/\s+/).filter(Boolean).sort().join(" ");
    setInterval(function () {
      getJSON("/admin/api/approvals").then(function (a) {
        var now = (a.pending || []).map(function (p) { return p.id; }).sort().join(" ");
        if (now !== shown) { window.location.reload(); }
      }).catch(function () {});
    }, 1500);
  }

  // The fragment never reaches the server; take it out of the address bar
  // (and this history entry) before anything else, then post it.
  function loginFromLink() {
    var m = /^#token=([^&]+)$/.exec(window.location.hash || "");
    var field = document.getElementById("token");
    if (!m || !field || !field.form) { return; }
    window.history.replaceState(null, "", window.location.pathname);
    field.value = decodeURIComponent(m[1]);
    field.form.submit();
  }

  if (page === "login") { loginFromLink(); }
  if (page === "metrics") { drawCharts(); }
  if (page === "activity") { watchApprovals(); }
})();
