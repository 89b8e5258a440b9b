"""The report's style sheet, embedded in every page (no external fonts or files)."""

__all__ = ["CSS"]

CSS = """
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--accent:#2563eb;--bg:#f3f5f8}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
header{background:#0f172a;color:#f8fafc;padding:22px 36px 18px}
header h1{margin:0 0 4px;font-size:24px;font-weight:650;letter-spacing:-.01em}
.badge{display:inline-block;background:var(--accent);color:#fff;border-radius:999px;padding:1px 10px;
font-size:12px;font-weight:600;vertical-align:middle;margin-left:8px}
.meta{color:#cbd5e1;font-size:13px;margin:2px 0}
.meta code{color:#e2e8f0;background:#1e293b;padding:1px 6px;border-radius:4px;word-break:break-all}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.kpi{background:#1e293b;border-radius:8px;padding:6px 14px;min-width:80px}
.kpi b{display:block;font-size:18px}.kpi span{color:#94a3b8;font-size:12px}
nav{margin-top:12px;font-size:13px}nav a{color:#93c5fd;margin-right:14px;text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:8px 36px 48px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px 22px;margin:18px 0;
box-shadow:0 1px 2px rgba(15,23,42,.05)}
h2{font-size:18px;margin:0 0 10px}h3{font-size:14px;margin:16px 0 6px}
p.note{color:var(--muted);font-size:13px}
table.data{border-collapse:collapse;font-size:13px;margin:6px 0}
table.data th,table.data td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top}
table.data thead th{background:#f8fafc;border-bottom:2px solid var(--line)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.tablewrap{overflow-x:auto;max-height:480px;overflow-y:auto}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:6px 0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-word}
.statement{border-left:4px solid var(--accent);background:#eff6ff;padding:10px 14px;font-weight:600;
border-radius:4px}
.nodp{border-left:4px solid #d62728;background:#fef2f2;padding:10px 14px;border-radius:4px}
.ledger{border-top:1px dashed var(--line);margin-top:10px}
.charts{display:flex;flex-wrap:wrap;gap:14px}
.chart{background:#fff;border:1px solid var(--line);border-radius:6px}
.graphrow{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.graphwrap{overflow:auto;flex:1 1 auto;text-align:center}svg.graph{max-width:100%;height:auto}
.side{flex:0 1 300px}
.side ul.legend{flex-direction:column;gap:6px}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:18px;margin:8px 0}
ul.legend li{display:flex;align-items:center;gap:6px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
footer{color:var(--muted);font-size:12px;text-align:center;padding:0 0 24px}
"""
