// Progressive enhancements only: every action works without JavaScript.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-confirm]");
  if (button && !window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
});
var all = document.getElementById("select-all");
if (all) all.addEventListener("change", function () {
  document.querySelectorAll("input[name=ids]").forEach(function (box) { box.checked = all.checked; });
});
// Live pages: a part marked data-live="URL" is fetched again every few seconds while the
// tab is visible (one request, one query) and replaced; a failed fetch leaves it as it is.
document.querySelectorAll("[data-live]").forEach(function (part) {
  var every = Number(part.getAttribute("data-every")) || 5000;
  var busy = false;
  setInterval(function () {
    if (document.hidden || busy) return;
    busy = true;
    fetch(part.getAttribute("data-live"), {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) part.innerHTML = html; })
      .catch(function () {})
      .then(function () { busy = false; });
  }, every);
});
