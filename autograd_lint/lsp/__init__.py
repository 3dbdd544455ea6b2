"""The language server (`autograd-lint server`): diagnostics, quick fixes,
fix-all, noqa and hover over the Language Server Protocol.

A face, like the CLI: it reads documents from the editor, asks the same
engine for findings (in worker processes, so the event loop never waits on a
parse) and turns them into LSP objects. Needs the ``lsp`` extra (pygls).

- ``server.py``: the pygls server, document state, debounce, scheduling;
- ``convert.py``: findings and edits to LSP diagnostics and text edits
  (positions in the negotiated encoding, UTF-16 by default);
- ``actions.py``: code actions (per-finding fixes, noqa, fix-all) and hover;
- ``options.py``: the client's options and per-document settings;
- ``worker.py``: the process pool that lints and fixes, with a time limit.
"""
