// Review pages: j / k previous / next item, n next item to review (the queue too), a next item to audit; a claim lights up its contexts.
(function () {
  "use strict";

  function follow(id) {
    var link = document.getElementById(id);
    if (link && link.href) window.location.assign(link.href);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    if (event.key === "j") follow("next-item");
    else if (event.key === "k") follow("prev-item");
    else if (event.key === "n") follow("next-review");
    else if (event.key === "a") follow("next-audit");
  });

  function highlight(ids, claim) {
    document.querySelectorAll(".claim.selected").forEach(function (el) { el.classList.remove("selected"); });
    if (claim) claim.classList.add("selected");
    var first = null;
    document.querySelectorAll(".context").forEach(function (context) {
      var on = ids.indexOf(context.dataset.contextId) !== -1;
      context.classList.toggle("highlighted", on);
      if (on && !first) first = context;
    });
    if (first) first.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  document.addEventListener("click", function (event) {
    var ref = event.target.closest(".ctx-ref");
    if (ref) {
      highlight([ref.dataset.ctx], ref.closest(".claim"));
      return;
    }
    var claim = event.target.closest(".claim");
    if (!claim || event.target.closest("form, summary, details")) return;
    var ids = Array.prototype.map.call(claim.querySelectorAll(".claim-contexts .ctx-ref"), function (el) {
      return el.dataset.ctx;
    });
    highlight(ids, claim);
  });

  document.addEventListener("keydown", function (event) {
    var claim = event.target.closest && event.target.closest(".claim");
    if (claim && event.target === claim && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      claim.click();
    }
  });
})();
