// Run comparison page: clicking a point of the base-vs-candidate scatter opens that example's diff.
// The point's customdata is the example's external id; the wrapper's data-item-url ends in "&example=".
(function () {
  "use strict";

  function bind(wrapper) {
    var plot = wrapper.querySelector(".plotly-graph-div");
    if (!plot || typeof plot.on !== "function") return false;
    plot.on("plotly_click", function (event) {
      var point = event && event.points && event.points.find(function (p) { return p.customdata !== undefined; });
      if (point) window.location.href = wrapper.dataset.itemUrl + encodeURIComponent(point.customdata);
    });
    return true;
  }

  function start() {
    document.querySelectorAll("[data-item-url]").forEach(function (wrapper) {
      if (!bind(wrapper)) {
        // Plotly draws asynchronously on a slow machine: bind once the plot exists.
        var tries = 0;
        var timer = window.setInterval(function () {
          if (bind(wrapper) || ++tries > 50) window.clearInterval(timer);
        }, 100);
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
