// Keep tables inside the text column (issue 29, item 17): a table wider than the column gets
// the class aiinfra-stacked (one block per row, each cell labelled with its column's header).
// Display equations are kept narrow in the source (aligned and split environments).
(function () {
  "use strict";

  function column() {
    return document.querySelector("article.bd-article");
  }

  // width of an element's content box (clientWidth less the padding)
  function contentWidth(el) {
    var css = window.getComputedStyle(el);
    return el.clientWidth - (parseFloat(css.paddingLeft) || 0) - (parseFloat(css.paddingRight) || 0);
  }

  function labelCells(table) {
    if (table.dataset.aiinfraLabelled) return;
    var head = table.querySelector("thead tr") || null;
    if (head) {
      var names = Array.prototype.map.call(head.children, function (c) {
        return c.textContent.replace(/\s+/g, " ").trim();
      });
      Array.prototype.forEach.call(table.querySelectorAll("tbody tr"), function (tr) {
        Array.prototype.forEach.call(tr.children, function (cell, i) {
          if (names[i]) cell.setAttribute("data-label", names[i]);
        });
      });
    }
    table.dataset.aiinfraLabelled = "1";
  }

  function fitTables(col) {
    var width = contentWidth(col);
    Array.prototype.forEach.call(col.querySelectorAll("table"), function (t) {
      t.classList.remove("aiinfra-stacked");
      if (t.scrollWidth > width + 1 || t.getBoundingClientRect().width > width + 1) {
        labelCells(t);
        t.classList.add("aiinfra-stacked");
      }
    });
  }

  function fit() {
    var col = column();
    if (!col) return;
    fitTables(col);
  }

  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(fit);
    } else {
      fit();
    }
  }

  var pending = null;
  window.addEventListener("resize", function () {
    if (pending) window.cancelAnimationFrame(pending);
    pending = window.requestAnimationFrame(fit);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
  window.addEventListener("load", whenTypeset);
})();
