"""The language server end to end: a real LSP client (pytest-lsp) starts
`autograd-lint server` over stdio, opens documents, receives diagnostics,
asks for code actions and hover, applies the edits and sees the result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from _cli_support import RETENTION_LOOP, SYNTAX_ERROR_SOURCE, pyproject, write
from _lsp_support import (
    SERVER_COMMAND,
    apply_and_relint,
    apply_edits,
    change_doc,
    close_doc,
    code_actions,
    diagnostics,
    edits_of,
    make_client,
    open_doc,
    range_text,
    until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# The same document with a non-ASCII string before the finding on its line:
# 'é' is one UTF-16 unit but two UTF-8 bytes, the emoji two UTF-16 units.
UNICODE_LOOP = RETENTION_LOOP.replace("        losses.append(loss)", '        tag = "é😀"; losses.append(loss)')


# One server per client kind, for the whole module.
SERVER = dict(config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client), scope="module")


async def _session(lsp_client: LanguageClient, capabilities: types.ClientCapabilities, options: dict | None = None):
    lsp_client.init_result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, initialization_options=options)
    )
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(**SERVER)
async def client(lsp_client: LanguageClient):
    async for _ in _session(lsp_client, client_capabilities("visual-studio-code"), {"debounceMs": 20}):
        yield


@pytest.fixture
def project(tmp_path: Path) -> Path:
    # A project of its own, so that this repository's config does not apply.
    pyproject(tmp_path, "")
    return tmp_path


async def test_initialize_advertises_features(client: LanguageClient) -> None:
    caps = client.init_result.capabilities
    assert caps.code_action_provider.resolve_provider is True
    assert "source.fixAll.autograd-lint" in caps.code_action_provider.code_action_kinds
    assert caps.hover_provider
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert client.init_result.server_info.name == "autograd-lint"
    # Config files are watched through the client where it can.
    watched = await until(lambda: client.registrations, what="file watcher registration")
    assert watched[0].method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    globs = [w["globPattern"] for w in watched[0].register_options["watchers"]]
    assert "**/pyproject.toml" in globs and "**/requirements*.txt" in globs


async def test_diagnostics_match_the_cli(client: LanguageClient, project: Path, capsys) -> None:
    path = write(project / "train.py", RETENTION_LOOP)
    uri = open_doc(client, path, RETENTION_LOOP)
    diags = await diagnostics(client, uri, 1)
    assert [d.code for d in diags] == ["AGL101"]
    d = diags[0]
    assert d.source == "autograd-lint"
    assert d.severity == types.DiagnosticSeverity.Warning
    assert d.code_description.href.endswith("/rules/AGL101.md")
    # The same finding, at the same place, as `autograd-lint --format json`.
    from autograd_lint import cli

    cli.main(["--format", "json", str(path)])
    (cli_finding,) = json.loads(capsys.readouterr().out)
    assert d.message == cli_finding["message"]
    assert (d.range.start.line + 1, d.range.start.character + 1) == (cli_finding["location"]["row"], cli_finding["location"]["column"])
    assert (d.range.end.line + 1, d.range.end.character + 1) == (cli_finding["end_location"]["row"], cli_finding["end_location"]["column"])
    assert range_text(RETENTION_LOOP, d.range) == "losses.append(loss)"
    close_doc(client, uri)
    assert await diagnostics(client, uri) == []


async def test_utf16_columns_after_non_ascii_text(client: LanguageClient, project: Path) -> None:
    path = write(project / "unicode.py", UNICODE_LOOP)
    uri = open_doc(client, path, UNICODE_LOOP)
    (d,) = await diagnostics(client, uri, 1)
    line = UNICODE_LOOP.splitlines()[d.range.start.line]
    code_points = line.index("losses.append")
    # 'é' is 1 UTF-16 unit, '😀' is 2: one more unit than code points.
    assert d.range.start.character == code_points + 1
    assert range_text(UNICODE_LOOP, d.range, "utf-16") == "losses.append(loss)"
    # The fix's edit, applied in UTF-16 units, lands on the right text too.
    actions = await code_actions(client, uri, d)
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix and "detach" in a.title)
    fixed = apply_edits(UNICODE_LOOP, edits_of(fix.edit, uri))
    assert 'tag = "é😀"; losses.append(loss.detach())' in fixed
    close_doc(client, uri)


async def test_quick_fix_applied_clears_the_diagnostic(client: LanguageClient, project: Path) -> None:
    path = write(project / "loop.py", RETENTION_LOOP)
    uri = open_doc(client, path, RETENTION_LOOP)
    (d,) = await diagnostics(client, uri, 1)
    actions = await code_actions(client, uri, d)
    titles = [a.title for a in actions]
    assert titles[0] == "AGL101: Store `.detach()` of the value"
    assert "Disable AGL101 for this line" in titles
    fix = actions[0]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert fix.diagnostics[0].code == "AGL101"
    # VS Code takes versioned edits: the edit names the version it is for.
    assert fix.edit.document_changes[0].text_document.version == 1
    fixed, after = await apply_and_relint(client, uri, RETENTION_LOOP, fix.edit)
    assert "losses.append(loss.detach())" in fixed
    assert after == []
    close_doc(client, uri)


async def test_unsafe_fix_is_labelled_and_not_preferred(client: LanguageClient, project: Path) -> None:
    text = (FIXTURES / "AGL201" / "pos_attention_probs_masked_fill.py").read_text()
    uri = open_doc(client, write(project / "attn.py", text), text)
    (d,) = await diagnostics(client, uri, 1)
    assert d.code == "AGL201" and d.severity == types.DiagnosticSeverity.Error
    actions = await code_actions(client, uri, d)
    fix = actions[0]
    assert fix.title == "AGL201: Rewrite to the out-of-place op (unsafe fix)"
    assert not fix.is_preferred
    fixed, after = await apply_and_relint(client, uri, text, fix.edit)
    assert "attn = attn.masked_fill(key_padding_mask[:, None, :], 0.0)" in fixed
    assert after == []
    close_doc(client, uri)


async def test_fix_all_resolves_to_every_safe_fix(client: LanguageClient, project: Path) -> None:
    text = RETENTION_LOOP + "\n\ndef train2(model, loader, opt):\n    total = 0\n    for x, y in loader:\n        loss = model(x).sum()\n        loss.backward()\n        total += loss\n    return float(total)\n"
    uri = open_doc(client, write(project / "two.py", text), text)
    diags = await diagnostics(client, uri, 1)
    assert sorted(d.code for d in diags) == ["AGL101", "AGL102"]
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(types.TextDocumentIdentifier(uri), whole, types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll]))
    )
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.autograd-lint" and fix_all.title == "Fix all autograd-lint issues"
    # The client resolves the edit only when the action is chosen.
    assert fix_all.edit is None
    resolved = await client.code_action_resolve_async(fix_all)
    fixed, after = await apply_and_relint(client, uri, text, resolved.edit)
    assert "losses.append(loss.detach())" in fixed and "total += loss.detach()" in fixed
    assert after == []
    close_doc(client, uri)


async def test_noqa_action_silences_the_line(client: LanguageClient, project: Path) -> None:
    text = RETENTION_LOOP.replace("losses.append(loss)", "losses.append(loss)  # keep: plotted later")
    uri = open_doc(client, write(project / "noqa.py", text), text)
    (d,) = await diagnostics(client, uri, 1)
    actions = await code_actions(client, uri, d)
    noqa = next(a for a in actions if a.title == "Disable AGL101 for this line")
    fixed, after = await apply_and_relint(client, uri, text, noqa.edit)
    assert "losses.append(loss)  # keep: plotted later  # noqa: AGL101\n" in fixed
    assert after == []
    close_doc(client, uri)


async def test_hover_shows_the_rule_summary(client: LanguageClient, project: Path) -> None:
    uri = open_doc(client, write(project / "hover.py", RETENTION_LOOP), RETENTION_LOOP)
    (d,) = await diagnostics(client, uri, 1)
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), d.range.start))
    assert hover.contents.kind == types.MarkupKind.Markdown
    value = hover.contents.value
    assert value.startswith("**AGL101** `graph-stored-in-container`:")
    assert "rules/AGL101.md" in value
    nothing = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0)))
    assert nothing is None
    close_doc(client, uri)


async def test_broken_document_gives_agl001_then_recovers(client: LanguageClient, project: Path) -> None:
    uri = open_doc(client, write(project / "broken.py", SYNTAX_ERROR_SOURCE), SYNTAX_ERROR_SOURCE)
    (d,) = await diagnostics(client, uri, 1)
    assert d.code == "AGL001" and d.severity == types.DiagnosticSeverity.Error
    assert d.range.start.line == 2 and d.range.end.character > d.range.start.character
    actions = await code_actions(client, uri, d)
    assert not actions  # no fix and no noqa for a file that does not parse
    change_doc(client, uri, RETENTION_LOOP, 2)
    assert [d.code for d in await diagnostics(client, uri, 2)] == ["AGL101"]
    close_doc(client, uri)


async def test_a_document_too_deep_to_parse_does_not_take_the_server_down(client: LanguageClient, project: Path) -> None:
    # LibCST's native parser would overflow its stack on it (SIGSEGV).
    deep = "import torch\nx = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    uri = open_doc(client, write(project / "deep.py", deep), deep)
    (d,) = await diagnostics(client, uri, 1)
    assert d.code == "AGL001" and "too many nested parentheses" in d.message
    other = open_doc(client, write(project / "after.py", RETENTION_LOOP), RETENTION_LOOP)
    assert [d.code for d in await diagnostics(client, other, 1)] == ["AGL101"]
    close_doc(client, uri, other)


async def test_only_the_latest_version_is_published(client: LanguageClient, project: Path) -> None:
    # Typing fast: ten edits sent at once, inside a debounce window long
    # enough that only a stalled server could see a gap between them (this
    # module's 20 ms is shorter than a busy machine's scheduling hiccups).
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"debounceMs": 3000}}))
    try:
        uri = open_doc(client, write(project / "typing.py", RETENTION_LOOP), RETENTION_LOOP)
        await diagnostics(client, uri, 1)  # after the option change: the notifications are handled in order
        for v in range(2, 12):
            change_doc(client, uri, RETENTION_LOOP + f"# edit {v}\n", v)
        assert [d.code for d in await diagnostics(client, uri, 11)] == ["AGL101"]
        assert not [p for p in client.published if p.uri == uri and p.version != 11]
        close_doc(client, uri)
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"debounceMs": 20}}))


async def test_project_config_is_read_and_reloaded(client: LanguageClient, tmp_path: Path) -> None:
    cfg = pyproject(tmp_path, 'ignore = ["AGL101"]\n')
    uri = open_doc(client, write(tmp_path / "src" / "train.py", RETENTION_LOOP), RETENTION_LOOP)
    assert await diagnostics(client, uri, 1) == []
    # The user edits pyproject.toml; the editor's file watcher reports it.
    cfg.write_text("[tool.autograd-lint]\nignore = []\n")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(uri=cfg.as_uri(), type=types.FileChangeType.Changed)])
    )
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    # Without a watcher notification, the server's own poll notices too.
    cfg.write_text("[tool.autograd-lint]\nignore = [\"AGL1\"]\n")
    assert await diagnostics(client, uri, 1) == []
    close_doc(client, uri)


async def test_broken_config_is_reported_and_defaults_apply(client: LanguageClient, tmp_path: Path) -> None:
    cfg = pyproject(tmp_path, 'slect = ["AGL1"]\n')
    uri = open_doc(client, write(tmp_path / "train.py", RETENTION_LOOP), RETENTION_LOOP)
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    message = await until(lambda: next((m for m in client.messages if "slect" in m.message), None), what="config error message")
    assert message.type == types.MessageType.Error
    assert "unknown key 'slect'" in message.message and "did you mean 'select'" in message.message

    def told() -> int:
        return sum("slect" in m.message for m in client.messages)

    # Told when it breaks, not at every edit while it stays broken; told
    # again when it breaks again after a fix.
    change_doc(client, uri, RETENTION_LOOP + "# 2\n", 2)
    await diagnostics(client, uri, 2)
    assert told() == 1
    cfg.write_text("[tool.autograd-lint]\n")
    change_doc(client, uri, RETENTION_LOOP + "# 3\n", 3)
    await diagnostics(client, uri, 3)
    cfg.write_text('[tool.autograd-lint]\nslect = ["AGL1"]\n')
    change_doc(client, uri, RETENTION_LOOP + "# 4\n", 4)
    await diagnostics(client, uri, 4)
    assert await until(lambda: told() == 2, what="the second config error message")
    close_doc(client, uri)


async def test_client_options_select_rules(client: LanguageClient, project: Path) -> None:
    uri = open_doc(client, write(project / "opts.py", RETENTION_LOOP), RETENTION_LOOP)
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"ignore": ["AGL101"]}}))
    assert await diagnostics(client, uri, 1) == []
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"ignore": [], "bogus": 1}}))
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    await until(lambda: any("unknown option 'bogus'" in m.message for m in client.messages), what="option warning")
    close_doc(client, uri)


async def test_unknown_messages_are_ignored(client: LanguageClient, project: Path) -> None:
    client.protocol.notify("custom/somethingNew", {"x": 1})
    client.protocol.notify("$/unknownNotification", None)
    with pytest.raises(Exception, match="[Mm]ethod [Nn]ot [Ff]ound|custom/request"):
        await client.protocol.send_request_async("custom/request", {})
    # Still serving.
    uri = open_doc(client, write(project / "alive.py", RETENTION_LOOP), RETENTION_LOOP)
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    close_doc(client, uri)


def _big_source(functions: int) -> str:
    body = "".join(
        f"def step_{i}(model, x, opt):\n    out = model(x)\n    loss = out.sum() * {i}\n    loss.backward()\n    opt.step()\n    return loss.item()\n\n\n"
        for i in range(functions)
    )
    return "import torch\n\n\n" + body


async def test_a_slow_document_does_not_block_the_others(client: LanguageClient, project: Path) -> None:
    # The order of events, not their times: the small document's
    # diagnostics and its hover come while the big one is still being linted
    # (seconds of CPU against milliseconds, whatever the machine's load).
    big = _big_source(2000)  # ~16,000 lines
    big_uri = open_doc(client, write(project / "big.py", big), big)
    small_uri = open_doc(client, write(project / "small.py", RETENTION_LOOP), RETENTION_LOOP)
    (d,) = await diagnostics(client, small_uri, 1)
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(small_uri), d.range.start))
    assert hover is not None
    assert not [p for p in client.published if p.uri == big_uri], "the big document finished first: the test shows nothing"
    assert [d.code for d in await diagnostics(client, big_uri, 1)] == []
    close_doc(client, big_uri, small_uri)


@pytest_lsp.fixture(**SERVER)
async def impatient(lsp_client: LanguageClient):
    # A client that has no resolve support, no versioned edits and plain-text
    # hover (a minimal editor), and a lint time limit (CPU seconds) the big
    # document cannot meet.
    caps = client_capabilities("neovim@v0.7.0")
    caps.text_document.code_action.resolve_support = None
    caps.workspace.workspace_edit.document_changes = False
    caps.text_document.hover.content_format = [types.MarkupKind.PlainText]
    async for _ in _session(lsp_client, caps, {"debounceMs": 0, "lintTimeoutSeconds": 1}):
        yield


async def test_timeouts_and_older_clients(impatient: LanguageClient, project: Path) -> None:
    client = impatient
    big = _big_source(6000)  # ~9 s of CPU; stopped after 1 s of it
    big_uri = open_doc(client, write(project / "big.py", big), big)
    await until(lambda: any("took more than 1 s of CPU time" in m.message for m in client.messages), what="timeout message")
    assert not [p for p in client.published if p.uri == big_uri]
    # The worker was replaced: the next document is linted as usual (the new
    # worker's start-up is not counted against its limit), and fix-all comes
    # with its edit (no resolve) as an unversioned change.
    uri = open_doc(client, write(project / "after.py", RETENTION_LOOP), RETENTION_LOOP)
    (d,) = await diagnostics(client, uri, 1)
    actions = await code_actions(client, uri, d)
    fix_all = next(a for a in actions if a.kind == "source.fixAll.autograd-lint")
    assert fix_all.edit.changes and not fix_all.edit.document_changes
    assert "losses.append(loss.detach())" in apply_edits(RETENTION_LOOP, edits_of(fix_all.edit, uri))
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), d.range.start))
    assert hover.contents.kind == types.MarkupKind.PlainText
    assert hover.contents.value.startswith("AGL101 graph-stored-in-container:")
    close_doc(client, big_uri, uri)


@pytest_lsp.fixture(**SERVER)
async def utf8_client(lsp_client: LanguageClient):
    caps = client_capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16])
    async for _ in _session(lsp_client, caps):
        yield


async def test_utf8_position_encoding_when_negotiated(utf8_client: LanguageClient, project: Path) -> None:
    client = utf8_client
    assert client.init_result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    uri = open_doc(client, write(project / "unicode8.py", UNICODE_LOOP), UNICODE_LOOP)
    (d,) = await diagnostics(client, uri, 1)
    line = UNICODE_LOOP.splitlines()[d.range.start.line]
    assert d.range.start.character == len(line[: line.index("losses.append")].encode("utf-8"))
    assert range_text(UNICODE_LOOP, d.range, "utf-8") == "losses.append(loss)"



async def test_crlf_and_form_feed_lines(client: LanguageClient, project: Path) -> None:
    # A form feed is not a line break for Python or LSP (str.splitlines
    # thinks it is); CRLF is one line end.
    text = ("# section\f\n" + RETENTION_LOOP).replace("\n", "\r\n")
    uri = open_doc(client, write(project / "crlf.py", text.encode()), text)
    (d,) = await diagnostics(client, uri, 1)
    assert d.range.start.line == 10
    assert range_text(text, d.range) == "losses.append(loss)"
    actions = await code_actions(client, uri, d)
    fixed = apply_edits(text, edits_of(actions[0].edit, uri))
    assert "        losses.append(loss.detach())\r\n" in fixed and "\r\r" not in fixed
    noqa = next(a for a in actions if a.title.startswith("Disable"))
    assert "        losses.append(loss)  # noqa: AGL101\r\n" in apply_edits(text, edits_of(noqa.edit, uri))
    close_doc(client, uri)


async def test_unsaved_buffers_and_other_languages(client: LanguageClient, project: Path) -> None:
    uri = "untitled:Untitled-1"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=RETENTION_LOOP))
    )
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL101"]
    close_doc(client, uri)
    toml = project / "pyproject.toml"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=toml.as_uri(), language_id="toml", version=1, text=toml.read_text()))
    )
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(toml.as_uri()), types.Position(0, 0)))
    assert hover is None
    assert not [p for p in client.published if p.uri == toml.as_uri()]


async def test_imported_modules_come_from_open_buffers_then_disk(client: LanguageClient, project: Path) -> None:
    # train.py's finding depends on what the helper module keeps: the server
    # reads it as the command line does (from disk, summarised once through
    # the cache) unless the editor holds it open, then from the buffer.
    from test_cache import METERS, TRAIN

    write(project / "meters.py", METERS)
    train = write(project / "train.py", TRAIN)
    uri = open_doc(client, train, TRAIN)
    assert [d.code for d in await diagnostics(client, uri, 1)] == ["AGL102"]
    helper = open_doc(client, project / "meters.py", METERS.replace("self.total += value", "self.total += float(value)"))
    await diagnostics(client, helper, 1)
    change_doc(client, uri, TRAIN + "\n", 2)  # relint train.py: the unsaved helper keeps a number
    assert await diagnostics(client, uri, 2) == []
    close_doc(client, helper)
    await diagnostics(client, helper)
    change_doc(client, uri, TRAIN, 3)  # the helper on disk keeps the graph again
    assert [d.code for d in await diagnostics(client, uri, 3)] == ["AGL102"]
    close_doc(client, uri)


async def test_each_document_uses_its_nearest_configuration(client: LanguageClient, tmp_path: Path) -> None:
    pyproject(tmp_path / "a", 'ignore = ["AGL101"]\n')
    pyproject(tmp_path / "b", "")
    uris = {p: open_doc(client, write(tmp_path / p / "train.py", RETENTION_LOOP), RETENTION_LOOP) for p in ("b", "a")}
    assert [d.code for d in await diagnostics(client, uris["b"], 1)] == ["AGL101"]
    assert await diagnostics(client, uris["a"], 1) == []
    close_doc(client, *uris.values())
