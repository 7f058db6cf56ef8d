// Client-side filters. The page must work from file:// with no server,
// so the state lives in the URL's fragment (`#kind=double-lock&crate=x`)
// or query (`?kind=…`): a filtered view can be linked, and a test can
// open one. A fragment without `=` is a plain anchor (a summary) and
// leaves the filters alone; `open=ID` expands findings.
(function () {
  "use strict";
  var items = Array.prototype.slice.call(document.querySelectorAll("details.finding"));
  var boxes = Array.prototype.slice.call(document.querySelectorAll("#filters input[type=checkbox]"));
  var groups = [];
  boxes.forEach(function (b) { if (groups.indexOf(b.dataset.group) < 0) groups.push(b.dataset.group); });

  function selected() {
    var s = {};
    groups.forEach(function (g) { s[g] = {}; });
    boxes.forEach(function (b) { if (b.checked) s[b.dataset.group][b.value] = true; });
    return s;
  }
  function passes(item, s, skip) {
    for (var i = 0; i < groups.length; i++) {
      var g = groups[i];
      if (g !== skip && !s[g][item.dataset[g]]) return false;
    }
    return true;
  }
  function apply() {
    var s = selected(), shown = 0;
    items.forEach(function (item) {
      var ok = passes(item, s, null);
      item.hidden = !ok;
      if (ok) shown++;
    });
    // Each value's count: the findings it would show given the other groups.
    boxes.forEach(function (b) {
      var g = b.dataset.group, n = 0;
      items.forEach(function (item) { if (item.dataset[g] === b.value && passes(item, s, g)) n++; });
      b.parentNode.querySelector(".count").textContent = n;
    });
    document.getElementById("shown").textContent = shown;
  }
  function fromUrl() {
    var hash = location.hash.slice(1);
    var text = hash.indexOf("=") >= 0 ? hash : location.search.slice(1);
    if (!text) return;
    var params = new URLSearchParams(text);
    // `open=f3,f7`: findings shown expanded (a link to a finding's detail
    // that keeps the list above it in view).
    (params.get("open") || "").split(",").forEach(function (id) {
      var d = id && document.getElementById(id);
      if (d && d.tagName === "DETAILS") d.open = true;
    });
    groups.forEach(function (g) {
      var v = params.get(g);
      if (v === null) return;
      var want = v.split(",");
      boxes.forEach(function (b) { if (b.dataset.group === g) b.checked = want.indexOf(b.value) >= 0; });
    });
  }
  function toUrl() {
    var s = selected(), params = new URLSearchParams();
    groups.forEach(function (g) {
      var all = boxes.filter(function (b) { return b.dataset.group === g; });
      var on = Object.keys(s[g]);
      if (on.length !== all.length) params.set(g, on.join(","));
    });
    var text = params.toString();
    try {
      history.replaceState(null, "", text ? "#" + text : location.pathname + location.search);
    } catch (e) {
      // Some browsers refuse history changes on file:// pages; the
      // filters still work, only the URL does not follow them.
    }
  }
  function openTarget() {
    var hash = location.hash.slice(1);
    if (!hash || hash.indexOf("=") >= 0) return;
    var t = document.getElementById(decodeURIComponent(hash));
    for (var d = t; d; d = d.parentElement) if (d.tagName === "DETAILS") d.open = true;
    if (t) t.scrollIntoView();
  }
  boxes.forEach(function (b) { b.addEventListener("change", function () { toUrl(); apply(); }); });
  document.getElementById("reset").addEventListener("click", function () {
    boxes.forEach(function (b) { b.checked = true; });
    toUrl();
    apply();
  });
  window.addEventListener("hashchange", function () {
    if (location.hash.indexOf("=") >= 0) { fromUrl(); apply(); } else { openTarget(); }
  });
  fromUrl();
  apply();
  openTarget();
})();
