// core/report/page.js: the report page's own script (docs/report.md). It
// draws the runs held by the JSON element #report-data with dygraphs, which
// the page holds inlined before this script (Debian's libjs-dygraphs). Every
// text that comes from a run (names, commands, annotations) is written with
// textContent or as a dygraphs label (which its legend escapes), never as
// HTML: a run's words reach the page as data, never as markup.
(function() {
'use strict';
var data = JSON.parse(document.getElementById('report-data').textContent);
// For people poking at the page's console, and for the browser test:
// every chart with its series and its Dygraph.
var report = {data: data, charts: []};
window.sexpgpuReport = report;

var palette = [
  '#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
  '#17becf'
];
var momentColours = {
  start: '#999',
  resume: '#ff7f0e',
  stage: '#2ca02c',
  checkpoint: '#bbb',
  target: '#d62728',
  annotation: '#9467bd',
  signal: '#8c564b',
  warning: '#e6a700',
  close: '#555'
};
var settings = {x: 'step', smoothing: 1, log: false, moments: true, filter: ''};

// A list from the data, which a hand-edited file may have made something else.
function list(v) { return Array.isArray(v) ? v : []; }

function el(tag, props, children) {
  var e = document.createElement(tag);
  Object.keys(props || {}).forEach(function(k) {
    if (k === 'text')
      e.textContent = props[k];
    else if (k === 'cls')
      e.className = props[k];
    else
      e.setAttribute(k, props[k]);
  });
  (children || []).forEach(function(c) {
    if (c === null || c === undefined) return;
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  });
  return e;
}

function show(v) {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return String(v);
    return String(Number(v.toPrecision(6)));
  }
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

function table(rows, cls) {
  return el('table', {cls: cls || 'facts'}, [el('tbody', {}, rows.map(function(r) {
              return el('tr', {}, [el('th', {text: r[0]}), el('td', {text: show(r[1])})]);
            }))]);
}

// A value axis's label: 2M rather than 2.00e+6, 0.5 rather than 500m.
function tick(v) {
  var a = Math.abs(v);
  var units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e4, 'k']];
  for (var i = 0; i < units.length; i++)
    if (a >= units[i][0]) return String(Number((v / units[i][0]).toPrecision(3))) + units[i][1];
  if (a !== 0 && a < 1e-3) return v.toExponential(1);
  return String(Number(v.toPrecision(4)));
}

function colour(run) { return palette[run % palette.length]; }

// ---- the runs: open metadata and summary ----------------------------------------------------

function selectionText(sel) {
  if (!sel || typeof sel !== 'object') return show(sel);
  var parts = [];
  if (list(sel.variants).length) parts.push('variants ' + list(sel.variants).join(','));
  Object.keys(sel.sets || {})
      .forEach(function(k) { parts.push('--set ' + k + '=' + show(sel.sets[k])); });
  if (sel.point) parts.push('point ' + sel.point);
  var knobs =
      Object.keys(sel.knobs || {}).map(function(k) { return k + '=' + show(sel.knobs[k]); });
  if (knobs.length) parts.push('knobs ' + knobs.join(' '));
  return parts.length ? parts.join('; ') : '(defaults)';
}

function deviceText(d) {
  if (!d || typeof d !== 'object') return show(d);
  var devices = list(d.devices).map(function(x) {
    var mem = x.memory_bytes ? ', ' + (x.memory_bytes / 1073741824).toFixed(1) + ' GiB' : '';
    var cc = x.compute_capability ? ', sm ' + x.compute_capability : '';
    return x.name + mem + cc + (x.driver ? ' (' + x.driver + ')' : '');
  });
  return (d.name || '?') + ' ' + (d.version || '') +
      (devices.length ? ': ' + devices.join('; ') : '');
}

function runCard(run, index) {
  var open = run.opens.length ? run.opens[0] : {};
  var facts = [
    ['directory', run.dir], ['state', run.state], ['command', list(open.command).join(' ')],
    ['file', (open.file || '-') + (open.file_hash ? '  (hash ' + open.file_hash + ')' : '')],
    ['selection', selectionText(open.selection)], ['IR hash', open.ir_hash],
    ['parameters', open.params], ['steps, seed', show(open.steps) + ', seed ' + show(open.seed)],
    ['effective batch', open.effective_batch], ['device', deviceText(open.device)],
    [
      'plugins',
      list(open.plugins)
          .map(function(p) { return p.name + ' ' + p.kind + ' ' + p.version; })
          .join(', ')
    ],
    ['host, started', show(open.host) + ', ' + show(open.started)],
    ['sexpgpu', show(open.version) + ' (IR ' + show(open.ir_version) + ')'],
    [
      'sessions',
      run.opens.length +
          (run.opens.length === 2   ? ' (resumed once)' :
               run.opens.length > 2 ? ' (resumed ' + (run.opens.length - 1) + ' times)' :
                                      '')
    ]
  ];
  run.opens.slice(1).forEach(function(o) {
    var from = o.resumed_from || {};
    facts.push([
      'resumed',
      'at step ' + show(from.step) + ' from ' + show(from.checkpoint) + ': ' +
          list(o.command).join(' ')
    ]);
  });
  if (list(open.modules).length)
    facts.push(
        ['modules', open.modules.map(function(m) { return m.path + ' ' + m.hash; }).join(', ')]);
  var summary = run.close && run.close.summary;
  var parts = [
    el('h3', {},
       [
         el('span', {cls: 'swatch', style: 'background:' + colour(index)}),
         el('span', {text: run.label}),
         el('span', {cls: 'state state-' + run.state, text: run.state})
       ]),
    el('h4', {text: 'open'}), table(facts)
  ];
  if (run.close && run.close.error)
    parts.push(
        el('p',
           {cls: 'error', text: show(run.close.error.code) + ' ' + show(run.close.error.message)}));
  if (summary) {
    parts.push(el('h4', {text: 'summary'}));
    var counts = [
      ['steps', summary.steps], ['wall time (s)', summary.wall_s], ['examples', summary.examples],
      ['tokens', summary.tokens]
    ];
    if (summary.target)
      counts.push([
        'target',
        summary.target.metric + ' ' + summary.target.op + ' ' + show(summary.target.value) +
            (summary.target.reached ? ': reached at step ' + show(summary.target.step) :
                                      ': not reached')
      ]);
    parts.push(table(counts));
    var metrics = Object.keys(summary.final || {}).sort();
    parts.push(el('table', {cls: 'summary'}, [
      el('thead', {}, [el('tr', {},
                          [
                            el('th', {text: 'metric'}), el('th', {text: 'final'}),
                            el('th', {text: 'best (step)'})
                          ])]),
      el('tbody', {}, metrics.map(function(m) {
        var best = (summary.best || {})[m];
        return el('tr', {}, [
          el('td', {text: m}), el('td', {text: show(summary.final[m])}),
          el('td', {text: best ? show(best.value) + ' (' + best.step + ')' : ''})
        ]);
      }))
    ]));
  } else if (run.status) {
    parts.push(el('h4', {text: 'status (no close event yet)'}));
    parts.push(table([
      ['state', run.status.state], ['step', show(run.status.step) + ' / ' + show(run.status.steps)],
      ['stage', run.status.stage], ['ETA (s)', run.status.eta_s],
      ['last checkpoint', run.status.last_checkpoint && run.status.last_checkpoint.path],
      ['updated', run.status.updated]
    ]));
  }
  return el('div', {cls: 'run', id: 'run-' + index}, parts);
}

// ---- sweeps -----------------------------------------------------------------------------

function sweepTable(s) {
  var sw = s.sweep || {};
  var points = list(sw.points);
  var knobs = [], metrics = [];
  points.forEach(function(p) {
    Object.keys(p.knobs || {}).forEach(function(k) {
      if (knobs.indexOf(k) < 0) knobs.push(k);
    });
    Object.keys(p.best || {}).forEach(function(m) {
      if (metrics.indexOf(m) < 0) metrics.push(m);
    });
  });
  metrics.sort();
  var head = ['point'].concat(
      knobs, metrics.map(function(m) { return m + ' (best@step)'; }),
      ['target', 'state', 'run directory']);
  var rows = points.map(function(p) {
    var cells = [show(p.index)];
    knobs.forEach(function(k) { cells.push(show((p.knobs || {})[k])); });
    metrics.forEach(function(m) {
      var b = (p.best || {})[m];
      cells.push(show((p.final || {})[m]) + (b ? ' (' + show(b.value) + '@' + b.step + ')' : ''));
    });
    var t = p.target;
    cells.push(t ? (t.reached ? 'reached@' + t.step : 'not reached') : '-');
    cells.push(show(p.state));
    cells.push(show(p.run_dir));
    return el('tr', {cls: 'point'}, cells.map(function(c) { return el('td', {text: c}); }));
  });
  return el('div', {cls: 'sweep'}, [
    el('h3', {text: 'sweep ' + show(sw.sweep) + ' of ' + show(sw.file) + ': ' + show(sw.state)}),
    el('p', {cls: 'muted', text: s.dir + '  ' + list(sw.command).join(' ')}),
    el('table', {cls: 'sweep-table'},
       [
         el('thead', {}, [el('tr', {}, head.map(function(h) { return el('th', {text: h}); }))]),
         el('tbody', {}, rows)
       ])
  ]);
}

// ---- charts -----------------------------------------------------------------------------

// The rows dygraphs draws for a series: [x, value of run a, value of run b, ...] over the
// runs that report it, x the step or the wall time; a run without a point at an x holds
// null there (connectSeparatedPoints draws over it).
function rowsFor(series, runs, mode) {
  var entries = [];
  runs.forEach(function(r, column) {
    series.points[r].forEach(function(p, order) {
      entries.push({x: mode === 'step' ? p[0] : p[1], column: column, value: p[2], order: order});
    });
  });
  entries.sort(function(a, b) { return a.x - b.x || a.column - b.column || a.order - b.order; });
  var rows = [], filled = null;
  entries.forEach(function(e) {
    var last = rows.length ? rows[rows.length - 1] : null;
    if (!last || last[0] !== e.x || filled[e.column]) {
      last = [e.x];
      for (var i = 0; i < runs.length; i++) last.push(null);
      rows.push(last);
      filled = {};
    }
    last[e.column + 1] = e.value;
    filled[e.column] = true;
  });
  return rows;
}

function labelsFor(runs, mode) {
  return [mode === 'step' ? 'step' : 'wall time (s)'].concat(
      runs.map(function(r) { return data.runs[r].label; }));
}

function drawMoments(runs) {
  return function(ctx, area, g) {
    if (!settings.moments) return;
    runs.forEach(function(r) {
      data.timeline.forEach(function(m) {
        if (m.run !== r || m.kind === 'close' || m.kind === 'start') return;
        var xv = settings.x === 'step' ? m.step : m.wall_s;
        if (xv === null || xv === undefined) return;
        var x = g.toDomXCoord(xv);
        if (x < area.x || x > area.x + area.w) return;
        ctx.save();
        ctx.strokeStyle = momentColours[m.kind] || '#999';
        ctx.setLineDash(m.kind === 'checkpoint' ? [2, 3] : []);
        ctx.beginPath();
        ctx.moveTo(x, area.y);
        ctx.lineTo(x, area.y + area.h);
        ctx.stroke();
        ctx.restore();
      });
    });
  };
}

function makeChart(series, holder) {
  var runs = [];
  series.points.forEach(function(p, r) {
    if (p && p.length) runs.push(r);
  });
  var plot = el('div', {cls: 'plot'});
  var legend = el('div', {cls: 'legend'});
  var card =
      el('div', {cls: 'chart', 'data-series': series.name},
         [el('h3', {text: series.name}), plot, legend]);
  holder.appendChild(card);
  var rows = rowsFor(series, runs, settings.x);
  var graph = new Dygraph(plot, rows, {
    labels: labelsFor(runs, settings.x),
    colors: runs.map(colour),
    connectSeparatedPoints: true,
    drawPoints: rows.length <= 60,
    pointSize: 2,
    rollPeriod: settings.smoothing,
    logscale: settings.log,
    labelsDiv: legend,
    labelsSeparateLines: false,
    legend: 'always',
    axes: {y: {axisLabelWidth: 60, axisLabelFormatter: tick}},
    xlabel: settings.x === 'step' ? 'step' : 'wall time (s)',
    underlayCallback: drawMoments(runs),
    width: 520,
    height: 240
  });
  report.charts.push(
      {series: series.name, source: series.source, runs: runs, graph: graph, card: card});
}

function redraw() {
  report.charts.forEach(function(c) {
    var series = data.series.filter(function(s) { return s.name === c.series; })[0];
    c.card.style.display = c.series.indexOf(settings.filter) >= 0 ? '' : 'none';
    c.graph.updateOptions({
      file: rowsFor(series, c.runs, settings.x),
      labels: labelsFor(c.runs, settings.x),
      xlabel: settings.x === 'step' ? 'step' : 'wall time (s)',
      rollPeriod: settings.smoothing,
      logscale: settings.log
    });
  });
}

// ---- controls and the timeline ----------------------------------------------------------

function controls() {
  var x = el('select', {id: 'x-axis'}, [
    el('option', {value: 'step', text: 'step'}), el('option', {value: 'wall', text: 'wall time'})
  ]);
  x.addEventListener('change', function() {
    settings.x = x.value;
    redraw();
  });
  var smooth = el('input', {id: 'smoothing', type: 'range', min: '1', max: '50', value: '1'});
  var smoothShown = el('span', {text: 'off'});
  smooth.addEventListener('input', function() {
    settings.smoothing = Number(smooth.value);
    smoothShown.textContent = settings.smoothing === 1 ? 'off' : settings.smoothing + ' points';
    redraw();
  });
  var log = el('input', {id: 'log-scale', type: 'checkbox'});
  log.addEventListener('change', function() {
    settings.log = log.checked;
    redraw();
  });
  var moments = el('input', {id: 'show-events', type: 'checkbox'});
  moments.checked = true;
  moments.addEventListener('change', function() {
    settings.moments = moments.checked;
    redraw();
  });
  var filter = el('input', {id: 'filter', type: 'search', placeholder: 'series name contains'});
  filter.addEventListener('input', function() {
    settings.filter = filter.value;
    redraw();
  });
  return el('div', {cls: 'controls'}, [
    el('label', {}, ['x axis ', x]), el('label', {}, ['smoothing ', smooth, ' ', smoothShown]),
    el('label', {}, [log, ' log scale']), el('label', {}, [moments, ' events on the charts']),
    el('label', {}, ['show ', filter])
  ]);
}

function timeline() {
  var rows = data.timeline.map(function(m) {
    return el('tr', {cls: 'moment kind-' + m.kind}, [
      el('td', {},
         [
           el('span', {cls: 'swatch', style: 'background:' + colour(m.run)}), data.runs[m.run].label
         ]),
      el('td', {text: show(m.step)}), el('td', {text: m.wall_s.toFixed(3)}),
      el('td', {text: m.time}), el('td', {}, [el('span', {
                                     cls: 'kind',
                                     style: 'border-color:' + (momentColours[m.kind] || '#999'),
                                     text: m.kind
                                   })]),
      el('td', {cls: 'text', text: m.text})
    ]);
  });
  return el('table', {cls: 'timeline'}, [
    el('thead', {}, [el('tr', {},
                        ['run', 'step', 'wall (s)', 'time', 'event', 'what'].map(function(
                            h) { return el('th', {text: h}); }))]),
    el('tbody', {}, rows)
  ]);
}

var app = document.getElementById('app');
app.appendChild(el('h1', {text: data.title}));
app.appendChild(el('p', {
  cls: 'muted',
  text: 'made by sexpgpu ' + data.version + ' at ' + data.generated + ' from ' + data.runs.length +
      (data.runs.length === 1 ? ' run' : ' runs')
}));
app.appendChild(controls());
if (data.sweeps.length) {
  app.appendChild(el('h2', {text: 'sweeps'}));
  data.sweeps.forEach(function(s) { app.appendChild(sweepTable(s)); });
}
app.appendChild(el('h2', {text: 'series'}));
var grid = el('div', {cls: 'charts'});
app.appendChild(grid);
data.series.forEach(function(s) { makeChart(s, grid); });
app.appendChild(el('h2', {text: 'events'}));
app.appendChild(timeline());
app.appendChild(el('h2', {text: 'runs'}));
var runs = el('div', {cls: 'runs'});
data.runs.forEach(function(r, i) { runs.appendChild(runCard(r, i)); });
app.appendChild(runs);
document.body.setAttribute('data-ready', 'true');
})();
