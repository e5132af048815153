// Progressive enhancements only: every action works without JavaScript.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-confirm]");
  if (button && !window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
});
var all = document.getElementById("select-all");
if (all) all.addEventListener("change", function () {
  document.querySelectorAll("input[name=ids]").forEach(function (box) { box.checked = all.checked; });
});
