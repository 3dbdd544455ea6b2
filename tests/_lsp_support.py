"""Helpers for the language-server tests (not a test module): a pytest-lsp
client that records every publishDiagnostics (with its version), document
edits applied the way an editor applies them, and waits on conditions.

A wait's deadline only turns a hang into a failure: nothing here measures
how fast the server is (the suite runs on busy machines)."""

from __future__ import annotations

import asyncio
import io
import sys
import time
from pathlib import Path
from typing import Callable

from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

SERVER_COMMAND = [sys.executable, "-m", "autograd_lint", "server"]
TIMEOUT = 120.0


def make_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics and every
    showMessage in order (its own keeps only the latest per document)."""
    client = make_test_lsp_client()
    client.published = []  # type: ignore[attr-defined]
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams):
        client.published.append(params)  # type: ignore[attr-defined]
        return original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

    # Editors accept dynamic registrations (file watchers); keep them.
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    return client


async def until(predicate: Callable[[], object], timeout: float = TIMEOUT, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def diagnostics(client: LanguageClient, uri: str, version: int | None = None, timeout: float = TIMEOUT) -> list[types.Diagnostic]:
    """The first diagnostics published for ``uri`` (at ``version``) that
    have not been consumed yet."""

    def find():
        for i, p in enumerate(client.published):
            if p.uri == uri and (version is None or p.version == version):
                del client.published[i]
                return (p,)
        return None

    found = await until(find, timeout, f"diagnostics for {uri} v{version}")
    return list(found[0].diagnostics)


def open_doc(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text))
    )
    return uri


def change_doc(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def close_doc(client: LanguageClient, *uris: str) -> None:
    for uri in uris:
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


async def code_actions(client: LanguageClient, uri: str, diag: types.Diagnostic) -> list[types.CodeAction]:
    """The code actions offered at a diagnostic, as an editor asks for them."""
    params = types.CodeActionParams(types.TextDocumentIdentifier(uri), diag.range, types.CodeActionContext(diagnostics=[diag]))
    return list(await client.text_document_code_action_async(params) or [])


def _offset(text: str, pos: types.Position, encoding: str = "utf-16") -> int:
    """The string index of an LSP position (code units of ``encoding``)."""
    lines = io.StringIO(text, newline="").readlines()  # LSP lines: \n, \r\n, \r only
    index = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return index + i
        units += len(ch.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(ch.encode("utf-8")) if encoding == "utf-8" else 1
    return index + len(line.rstrip("\r\n")) if pos.line < len(lines) else len(text)


def range_text(text: str, rng: types.Range, encoding: str = "utf-16") -> str:
    return text[_offset(text, rng.start, encoding) : _offset(text, rng.end, encoding)]


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str = "utf-16") -> str:
    """Apply LSP text edits the way an editor does (all ranges refer to the
    original text; applied from the end)."""
    spans = sorted(((_offset(text, e.range.start, encoding), _offset(text, e.range.end, encoding), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


async def apply_and_relint(
    client: LanguageClient, uri: str, text: str, edit: types.WorkspaceEdit, version: int = 2
) -> tuple[str, list[types.Diagnostic]]:
    """Apply a code action's edit as the editor would, send the new text as
    ``version``, and return it with the diagnostics published for it."""
    fixed = apply_edits(text, edits_of(edit, uri))
    change_doc(client, uri, fixed, version)
    return fixed, await diagnostics(client, uri, version)


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.document_changes:
        return [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    return list((edit.changes or {}).get(uri, []))
