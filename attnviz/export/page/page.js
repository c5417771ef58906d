// Draws every figure of an exported page from the figure scripts it holds (each one's text:
// {figure, config}); plotly.js is inside the page or beside it (attnviz.export.html.page_html).
(function () {
  var specs = document.querySelectorAll("script.attnviz-figure");
  if (!window.Plotly) {
    var p = document.createElement("p");
    p.className = "error";
    p.textContent = "plotly.min.js did not load: keep it in the same folder as this page.";
    document.body.insertBefore(p, document.body.firstChild);
    return;
  }
  specs.forEach(function (s) {
    var f = JSON.parse(s.textContent), layout = f.figure.layout || {};
    Object.keys(layout).forEach(function (k) {  // room for tick labels, as the app gives
      if (/^[xy]axis[0-9]*$/.test(k) && layout[k].automargin === undefined) {
        layout[k].automargin = true;
      }
    });
    var div = document.createElement("div");
    div.className = "figure";
    s.parentNode.insertBefore(div, s);
    Plotly.newPlot(div, f.figure.data || [], layout, f.config);
  });
})();
