"""The pygls server: document life cycle, scheduling, and the LSP features.

Each open document has a ``DocState``. Edits are debounced; one lint per
document runs at a time (in a worker process), and a lint whose document
changed meanwhile is run again instead of being published. Requests that
need findings (code actions, hover) wait for the lint of the current text,
so their ranges always match what the editor shows.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from autograd_lint import __version__
from autograd_lint.cache import Cache, default_dir
from autograd_lint.notebook import mask_ipython
from autograd_lint.settings import Settings
from autograd_lint.lsp import actions
from autograd_lint.lsp.actions import Linted
from autograd_lint.lsp.options import SECTION, Options, parse_options, settings_for
from autograd_lint.lsp.worker import JobTimeout, WorkerPool, fix_cells_job, fix_job, lint_cells_job, lint_job

log = logging.getLogger(__name__)

# The files whose change can change a document's settings: its config and
# the pins its torch version is inferred from.
CONFIG_GLOBS = ("**/pyproject.toml", "**/autograd-lint.toml", "**/.autograd-lint.toml", "**/setup.cfg", "**/requirements*.txt")
PYTHON_SUFFIXES = (".py", ".pyi")
# Notebooks whose Python cells the client syncs (LSP 3.17 notebookDocument/*).
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="*")]
)


@dataclass(frozen=True)
class CellText:
    """One cell of an open notebook, as the editor holds it."""

    uri: str
    kind: str  # "code" for a Python code cell, else "markdown"
    text: str
    version: int | None


@dataclass
class DocState:
    path: str
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task | None = None
    again: bool = False
    linted: Linted | None = None
    settings: Settings | None = None
    failed_version: int | None = None  # the version whose lint timed out or failed
    told_timeout: bool = False
    config_error: str | None = None  # the last one told
    # A notebook: its cells as linted (and as they failed), each code cell's
    # lint by cell URI, and the cells that were sent diagnostics.
    notebook: bool = False
    snapshot: tuple[CellText, ...] | None = None
    failed_snapshot: tuple[CellText, ...] | None = None
    cells: dict[str, Linted] = field(default_factory=dict)
    published: set[str] = field(default_factory=set)

    def is_current(self, doc: Any) -> bool:
        """Was the document's current text (this version) linted?"""
        return self.linted is not None and self.linted.version == doc.version and self.linted.text == doc.source


def _get(obj: Any, *attrs: str) -> Any:
    """``obj.a.b.c`` where any link may be None (client capabilities)."""
    for attr in attrs:
        if obj is None:
            return None
        obj = getattr(obj, attr, None)
    return obj


class AutogradLintServer(LanguageServer):
    def __init__(self, workers: int = 2) -> None:
        super().__init__(
            "autograd-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental, notebook_document_sync=NOTEBOOK_SYNC
        )
        self.options = Options()
        self.pool = WorkerPool(workers)
        self.docs: dict[str, DocState] = {}
        self._caches: dict[str, Cache | None] = {}
        self._poller: asyncio.Task | None = None

    # --- client capabilities -------------------------------------------------

    @property
    def _caps(self) -> types.ClientCapabilities | None:
        return self.protocol.client_capabilities

    @property
    def versioned_edits(self) -> bool:
        return bool(_get(self._caps, "workspace", "workspace_edit", "document_changes"))

    @property
    def resolves_edits(self) -> bool:
        props = _get(self._caps, "text_document", "code_action", "resolve_support", "properties") or []
        return "edit" in props

    @property
    def markdown_hover(self) -> bool:
        formats = _get(self._caps, "text_document", "hover", "content_format") or []
        return types.MarkupKind.Markdown in formats

    @property
    def encoding(self) -> str:
        return self.workspace.position_encoding or types.PositionEncodingKind.Utf16

    # --- messages -------------------------------------------------------------

    def tell(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"autograd-lint: {message}"))

    def _tell_timeout(self, doing: str, path: str) -> None:
        limit = self.options.lint_timeout_s
        self.tell(f"{doing} {os.path.basename(path)} took more than {limit:g} s of CPU time and was stopped; raise lintTimeoutSeconds to allow more")

    def _report_config_error(self, st: DocState, error: str | None) -> None:
        # When a document's config breaks (or breaks differently), not at
        # every keystroke while it stays broken.
        if error and error != st.config_error:
            self.tell(f"{error}; using the default settings until it is fixed", types.MessageType.Error)
        st.config_error = error

    def set_options(self, raw: Any) -> None:
        self.options = parse_options(raw, self.options)
        for problem in self.options.problems:
            self.tell(f"option {problem}")

    # --- documents and scheduling ---------------------------------------------

    def _path(self, uri: str) -> str | None:
        doc = self.workspace.get_text_document(uri)
        if uri.startswith("file:"):
            return doc.path
        # An unsaved buffer: lint it as a file in the workspace root, so the
        # project's config applies.
        root = self.workspace.root_path or os.getcwd()
        return os.path.join(root, os.path.basename(doc.path or "untitled") or "untitled")

    def open(self, uri: str, language_id: str | None) -> None:
        path = self._path(uri)
        if path is None or not (language_id == "python" or path.endswith(PYTHON_SUFFIXES)):
            return
        self.docs[uri] = DocState(path)
        self.schedule(uri, 0)

    def open_notebook(self, uri: str) -> None:
        if uri.startswith("file:"):
            path = to_fs_path(uri) or uri
        else:  # unsaved: as a notebook in the workspace root, like a buffer
            root = self.workspace.root_path or os.getcwd()
            path = os.path.join(root, os.path.basename(uri.rstrip("/")) or "untitled.ipynb")
        if not path.endswith(".ipynb"):
            path += ".ipynb"
        self.docs[uri] = DocState(path, notebook=True)
        self.schedule(uri, 0)

    def notebook_cells(self, uri: str) -> tuple[CellText, ...] | None:
        """The open notebook's cells, in order; None once it is closed."""
        nb = self.workspace.get_notebook_document(notebook_uri=uri)
        if nb is None:
            return None
        out = []
        for cell in nb.cells:
            doc = self.workspace.text_documents.get(unquote(cell.document))
            code = cell.kind == types.NotebookCellKind.Code and doc is not None and (doc.language_id or "python") == "python"
            out.append(CellText(cell.document, "code" if code else "markdown", doc.source if doc else "", doc.version if doc else None))
        return tuple(out)

    def close(self, uri: str) -> None:
        st = self.docs.pop(uri, None)
        if st is None:
            return
        if st.timer:
            st.timer.cancel()
        if st.task and not st.task.done():
            st.task.cancel()
        for target in st.published if st.notebook else [uri]:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=target, diagnostics=[]))

    def schedule(self, uri: str, delay: float) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        if st.timer:
            st.timer.cancel()
            st.timer = None
        if delay > 0:
            st.timer = asyncio.get_running_loop().call_later(delay, self._start, uri)
        else:
            self._start(uri)

    def _start(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        st.timer = None
        if st.task and not st.task.done():
            st.again = True
            return
        st.task = asyncio.ensure_future(self._lint_loop(uri, st))

    async def _lint_loop(self, uri: str, st: DocState) -> None:
        while self.docs.get(uri) is st:
            st.again = False
            snapshot: tuple[CellText, ...] | None = None
            if st.notebook:
                snapshot = self.notebook_cells(uri)
                if snapshot is None:
                    return
                job, subject, version = lint_cells_job, [(c.kind, c.text) for c in snapshot], None
            else:
                doc = self.workspace.get_text_document(uri)
                text, version = doc.source, doc.version
                job, subject = lint_job, text
            settings, error = settings_for(st.path, self.options)
            self._report_config_error(st, error)
            st.settings = settings
            try:
                findings = await self.pool.run(
                    self.options.lint_timeout_s, job, st.path, subject, settings, self._cache(settings), self._open_texts(uri)
                )
            except JobTimeout:
                self._failed(st, snapshot, version)
                if not st.told_timeout:  # once, not at every edit of a huge file
                    st.told_timeout = True
                    self._tell_timeout("linting", st.path)
                findings = None
            except Exception as e:  # a broken worker must not take the document down
                log.exception("lint failed for %s", uri)
                self._failed(st, snapshot, version)
                self.tell(f"internal error while linting {os.path.basename(st.path)}: {type(e).__name__}: {e}", types.MessageType.Error)
                findings = None
            if self.docs.get(uri) is not st:
                return
            if findings is not None:
                st.told_timeout = False
                if snapshot is not None:
                    self._publish_cells(uri, st, snapshot, findings, settings)
                else:
                    st.linted = Linted(uri, version, text, findings, self.encoding, st.path, settings)
                    if st.is_current(self.workspace.get_text_document(uri)):
                        self.text_document_publish_diagnostics(
                            types.PublishDiagnosticsParams(uri=uri, diagnostics=st.linted.diagnostics, version=version)
                        )
            if not st.again:
                return

    @staticmethod
    def _failed(st: DocState, snapshot: tuple[CellText, ...] | None, version: int | None) -> None:
        # What failed is not linted again until it changes.
        if snapshot is not None:
            st.failed_snapshot = snapshot
        else:
            st.failed_version = version

    def _publish_cells(self, uri: str, st: DocState, snapshot: tuple[CellText, ...], findings: list, settings: Settings) -> None:
        """Each code cell's findings, as a document of its own (the cells'
        URIs are the documents the editor shows)."""
        by_cell: dict[int | None, list] = {}
        for f in findings:
            by_cell.setdefault(f.cell, []).append(f)
        st.snapshot = snapshot
        st.cells = {
            c.uri: Linted(c.uri, c.version, c.text, by_cell.get(index, []), self.encoding, st.path, settings, python_text=mask_ipython(c.text))
            for index, c in enumerate(snapshot, start=1)
            if c.kind == "code"
        }
        if snapshot != self.notebook_cells(uri):
            return  # changed meanwhile: the lint that follows publishes
        for gone in st.published - set(st.cells):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone, diagnostics=[]))
        for cell_uri, linted in st.cells.items():
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=linted.diagnostics, version=linted.version)
            )
        st.published = set(st.cells)

    def _cache(self, settings) -> Cache | None:
        """The project's cache (the one the command line uses), opened once
        per folder; an unwritable one is said once."""
        directory = default_dir(settings)
        if directory not in self._caches:
            cache, warning = Cache.open(directory)
            if warning is not None:
                self.tell(warning)
            self._caches[directory] = cache
        return self._caches[directory]

    def _open_texts(self, uri: str) -> dict[str, str]:
        """The other Python documents the editor holds, by path: a module
        the linted one imports is read from its buffer, not from disk."""
        out = {}
        for other, st in self.docs.items():
            if other != uri and st.path and not st.notebook:  # a notebook is not imported
                out[st.path] = self.workspace.get_text_document(other).source
        return out

    async def current(self, uri: str) -> Linted | None:
        """The lint of the document's current text, waiting for it (without
        the debounce) when it is not there yet; None when it cannot be had.
        A notebook cell's lint is its notebook's."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        key = notebook.uri if notebook is not None else uri
        for _ in range(3):
            st = self.docs.get(key)
            if st is None:
                return None
            settled, linted = self._lint_of(key, st, uri)
            if settled:
                return linted
            if st.timer is not None or st.task is None or st.task.done():
                self.schedule(key, 0)
            if st.task is not None:
                try:
                    await asyncio.shield(st.task)
                except asyncio.CancelledError:
                    return None
        return None

    def _lint_of(self, key: str, st: DocState, uri: str) -> tuple[bool, Linted | None]:
        """Whether the lint of the current text is settled, and that lint
        (of the cell ``uri`` in a notebook); None for one that failed."""
        if st.notebook:
            snapshot = self.notebook_cells(key)
            if st.snapshot is not None and st.snapshot == snapshot:
                return True, st.cells.get(uri)
            return st.failed_snapshot is not None and st.failed_snapshot == snapshot, None
        doc = self.workspace.get_text_document(key)
        if st.is_current(doc):
            return True, st.linted
        return st.failed_version is not None and st.failed_version == doc.version, None

    async def refresh_settings(self, force: bool = False) -> None:
        """Re-lint the documents whose settings changed (config edited,
        pins changed) or all of them (``force``: client options changed)."""
        for uri, st in list(self.docs.items()):
            if force:
                self.schedule(uri, 0)
                continue
            settings, error = settings_for(st.path, self.options)
            self._report_config_error(st, error)
            if st.settings is not None and settings != st.settings:
                self.schedule(uri, 0)

    async def poll_config(self) -> None:
        # Clients without file watching still see config edits this way; a
        # poll costs a few stat calls and a small TOML parse per document.
        while True:
            delay = self.options.config_poll_s
            await asyncio.sleep(delay or 1.0)
            if delay:
                await self.refresh_settings()

    def can_fix_all(self, doc: Linted) -> bool:
        notebook = self.workspace.get_notebook_document(cell_uri=doc.uri)
        st = self.docs.get(notebook.uri) if notebook is not None else None
        linted = list(st.cells.values()) if st is not None else [doc]
        return any(actions.can_fix_all(d, self.options.unsafe_fixes) for d in linted)

    async def fix_all_edit(self, doc: Linted) -> types.WorkspaceEdit | None:
        notebook = self.workspace.get_notebook_document(cell_uri=doc.uri)
        if notebook is not None:
            return await self._fix_notebook_edit(notebook.uri)
        try:
            fixed = await self.pool.run(self.options.lint_timeout_s, fix_job, doc.path, doc.text, doc.settings, self.options.unsafe_fixes)
        except JobTimeout:
            self._tell_timeout("fixing", doc.path)
            return None
        for problem in fixed.problems:
            self.tell(problem)
        if fixed.text == doc.text:
            return None
        return actions.fix_all_edit(doc, fixed.text, self.versioned_edits)

    async def _fix_notebook_edit(self, uri: str) -> types.WorkspaceEdit | None:
        """Fix all in a notebook: its cells fixed as one program, one edit
        per changed cell."""
        st, snapshot = self.docs.get(uri), self.notebook_cells(uri)
        if st is None or snapshot is None or st.snapshot != snapshot:
            return None
        cells = [(c.kind, c.text) for c in snapshot]
        try:
            fixed = await self.pool.run(self.options.lint_timeout_s, fix_cells_job, st.path, cells, st.settings, self.options.unsafe_fixes)
        except JobTimeout:
            self._tell_timeout("fixing", st.path)
            return None
        for problem in fixed.problems:
            self.tell(problem)
        if not fixed.sources:
            return None
        return actions.cells_edit([(st.cells[snapshot[i].uri], text) for i, text in sorted(fixed.sources.items())], self.versioned_edits)

    def stop(self) -> None:
        if self._poller:
            self._poller.cancel()
        for uri in list(self.docs):
            st = self.docs.pop(uri)
            if st.timer:
                st.timer.cancel()
            if st.task:
                st.task.cancel()
        self.pool.close()


def create_server(workers: int = 2) -> AutogradLintServer:
    server = AutogradLintServer(workers)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AutogradLintServer, params: types.InitializeParams) -> None:
        if params.initialization_options is not None:
            ls.set_options(params.initialization_options)
        ls.pool.warm_up()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AutogradLintServer, params: types.InitializedParams) -> None:
        ls._poller = asyncio.ensure_future(ls.poll_config())
        if _get(ls._caps, "workspace", "did_change_watched_files", "dynamic_registration"):
            watchers = [types.FileSystemWatcher(glob_pattern=g) for g in CONFIG_GLOBS]
            registration = types.Registration(
                id="autograd-lint-config-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
            except Exception:  # the poll still sees config changes
                log.warning("the client refused file watching", exc_info=True)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AutogradLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.open(params.text_document.uri, params.text_document.language_id)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AutogradLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.options.debounce_s)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AutogradLintServer, params: types.DidSaveTextDocumentParams) -> None:
        st = ls.docs.get(params.text_document.uri)
        doc = ls.workspace.get_text_document(params.text_document.uri)
        if st is not None and not st.is_current(doc):
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutogradLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open_notebook(ls: AutogradLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.open_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change_notebook(ls: AutogradLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.options.debounce_s)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close_notebook(ls: AutogradLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close(params.notebook_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: AutogradLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        await ls.refresh_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: AutogradLintServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if not raw and _get(ls._caps, "workspace", "configuration"):
            # The client expects to be asked (the "pull" model).
            try:
                items = await ls.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
                )
                raw = items[0] if items else None
            except Exception:
                log.warning("workspace/configuration failed", exc_info=True)
        before = ls.options
        ls.set_options(raw)
        await ls.refresh_settings(force=ls.options != before)  # `problems` is not compared

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND], resolve_provider=True),
    )
    async def code_action(ls: AutogradLintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        doc = await ls.current(params.text_document.uri)
        if doc is None:
            return None
        only = params.context.only

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)

        result: list[types.CodeAction] = []
        if wanted(types.CodeActionKind.QuickFix):
            result.extend(actions.quick_fixes(doc, params.range, ls.versioned_edits))
        if wanted(actions.FIX_ALL_KIND) and ls.can_fix_all(doc):
            if ls.resolves_edits:
                # Computing the edit costs a fix run: only when it is chosen.
                result.append(actions.fix_all_action(data={"uri": doc.uri}, unsafe=ls.options.unsafe_fixes))
            else:
                edit = await ls.fix_all_edit(doc)
                if edit is not None:
                    result.append(actions.fix_all_action(edit=edit, unsafe=ls.options.unsafe_fixes))
        return result

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: AutogradLintServer, action: types.CodeAction) -> types.CodeAction:
        uri = action.data.get("uri") if isinstance(action.data, dict) else None
        if action.kind == actions.FIX_ALL_KIND and uri:
            doc = await ls.current(uri)
            if doc is not None:
                action.edit = await ls.fix_all_edit(doc)
        return action

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: AutogradLintServer, params: types.HoverParams) -> types.Hover | None:
        doc = await ls.current(params.text_document.uri)
        if doc is None:
            return None
        return actions.hover(doc, params.position, ls.markdown_hover)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: AutogradLintServer, params: None) -> None:
        ls.stop()

    return server


def main(workers: int = 2) -> int:
    logging.basicConfig(level=logging.WARNING, format="autograd-lint server: %(levelname)s %(name)s: %(message)s")
    server = create_server(workers)
    try:
        server.start_io()
    finally:
        server.stop()
    return 0
