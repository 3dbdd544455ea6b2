"""The language server on Jupyter notebooks (LSP 3.17 notebookDocument/*):
a real client (pytest-lsp) opens a notebook, edits its cells and its
structure, and gets diagnostics and code actions per cell, the cells linted
together as one program like `autograd-lint nb.ipynb`."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import pytest_lsp
from lsprotocol import types
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from _cli_support import NOTEBOOK_SETUP, NOTEBOOK_TRAINING as TRAINING, pyproject, write
from _lsp_support import SERVER_COMMAND, apply_edits, code_actions, diagnostics, edits_of, make_client, range_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

CELLS = [("markdown", "# Training"), ("python", NOTEBOOK_SETUP), ("python", TRAINING), ("python", "!nvidia-smi")]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client), scope="module")
async def client(lsp_client: LanguageClient):
    capabilities = client_capabilities("visual-studio-code")
    # An editor with notebooks says so; the server offers notebook sync then.
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
    )
    lsp_client.init_result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, initialization_options={"debounceMs": 20})
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    pyproject(tmp_path, "")
    return tmp_path


class Notebook:
    """An open notebook as the editor holds it: cell URIs, texts, versions."""

    def __init__(self, client: LanguageClient, path: Path, cells: list[tuple[str, str]]) -> None:
        self.client, self.uri, self.version = client, path.as_uri(), 1
        self.cells = [[f"{self.uri}#cell{i}", language, text, 1] for i, (language, text) in enumerate(cells)]
        self._next = len(cells)
        nb_cells = [types.NotebookCell(kind=self._kind(c[1]), document=c[0]) for c in self.cells]
        client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(uri=self.uri, notebook_type="jupyter-notebook", version=1, cells=nb_cells),
                cell_text_documents=[self._item(c) for c in self.cells],
            )
        )

    @staticmethod
    def _kind(language: str) -> types.NotebookCellKind:
        return types.NotebookCellKind.Code if language == "python" else types.NotebookCellKind.Markup

    @staticmethod
    def _item(cell: list) -> types.TextDocumentItem:
        return types.TextDocumentItem(uri=cell[0], language_id=cell[1], version=cell[3], text=cell[2])

    def cell_uri(self, index: int) -> str:
        return self.cells[index][0]

    def text(self, index: int) -> str:
        return self.cells[index][2]

    def edit(self, index: int, text: str) -> None:
        cell = self.cells[index]
        cell[2], cell[3] = text, cell[3] + 1
        self.version += 1
        change = types.NotebookDocumentCellContentChanges(
            document=types.VersionedTextDocumentIdentifier(uri=cell[0], version=cell[3]),
            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
        self._send(types.NotebookDocumentCellChanges(text_content=[change]))

    def apply(self, edit: types.WorkspaceEdit) -> None:
        for index, cell in enumerate(self.cells):
            edits = edits_of(edit, cell[0])
            if edits:
                self.edit(index, apply_edits(cell[2], edits))

    def delete(self, index: int) -> None:
        (cell,) = self.cells[index : index + 1]
        del self.cells[index]
        self.version += 1
        structure = types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=index, delete_count=1), did_close=[types.TextDocumentIdentifier(uri=cell[0])]
        )
        self._send(types.NotebookDocumentCellChanges(structure=structure))

    def insert(self, index: int, text: str) -> str:
        cell = [f"{self.uri}#cell{self._next}", "python", text, 1]
        self._next += 1
        self.cells.insert(index, cell)
        self.version += 1
        structure = types.NotebookDocumentCellChangeStructure(
            array=types.NotebookCellArrayChange(start=index, delete_count=0, cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell[0])]),
            did_open=[self._item(cell)],
        )
        self._send(types.NotebookDocumentCellChanges(structure=structure))
        return cell[0]

    def _send(self, cells: types.NotebookDocumentCellChanges) -> None:
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
                change=types.NotebookDocumentChangeEvent(cells=cells),
            )
        )

    def close(self) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[types.TextDocumentIdentifier(uri=c[0]) for c in self.cells],
            )
        )


async def test_notebook_sync_is_advertised(client: LanguageClient) -> None:
    sync = client.init_result.capabilities.notebook_document_sync
    (selector,) = sync.notebook_selector
    assert [c.language for c in selector.cells] == ["python"]


async def test_each_cell_gets_its_findings_as_the_cli_gives_them(client: LanguageClient, project: Path, capsys) -> None:
    path = project / "train.ipynb"
    nb = Notebook(client, path, CELLS)
    (d,) = await diagnostics(client, nb.cell_uri(2), 1)
    assert await diagnostics(client, nb.cell_uri(1), 1) == [] and await diagnostics(client, nb.cell_uri(3), 1) == []
    assert d.code == "AGL101" and range_text(nb.text(2), d.range) == "losses.append(loss)"
    # The same finding as the command line on the same notebook.
    write(path, nbformat.writes(new_notebook(cells=[new_markdown_cell(CELLS[0][1]), *(new_code_cell(t) for _, t in CELLS[1:])])))
    from autograd_lint import cli

    cli.main(["--format", "json", "--no-cache", str(path)])
    (found,) = json.loads(capsys.readouterr().out)
    assert (found["cell"], found["location"]["row"], found["location"]["column"]) == (3, d.range.start.line + 1, d.range.start.character + 1)
    assert found["message"] == d.message
    nb.close()
    assert await diagnostics(client, nb.cell_uri(2)) == []


async def test_a_quick_fix_edits_its_cell(client: LanguageClient, project: Path) -> None:
    nb = Notebook(client, project / "fix.ipynb", CELLS)
    (d,) = await diagnostics(client, nb.cell_uri(2), 1)
    actions = await code_actions(client, nb.cell_uri(2), d)
    fix = next(a for a in actions if "detach" in a.title)
    assert [c.text_document.uri for c in fix.edit.document_changes] == [nb.cell_uri(2)]
    nb.apply(fix.edit)
    assert nb.text(2).endswith("losses.append(loss.detach())")
    assert await diagnostics(client, nb.cell_uri(2), 2) == []
    nb.close()


async def test_noqa_in_a_cell_with_ipython_lines(client: LanguageClient, project: Path) -> None:
    cells = [("python", "import torch\nmodel = torch.nn.Linear(3, 1)"), ("python", "%%time\n" + TRAINING.replace("    opt.step()\n", "    !echo step\n"))]
    nb = Notebook(client, project / "noqa.ipynb", cells)
    (d,) = await diagnostics(client, nb.cell_uri(1), 1)
    actions = await code_actions(client, nb.cell_uri(1), d)
    noqa = next(a for a in actions if a.title == "Disable AGL101 for this line")
    nb.apply(noqa.edit)
    assert "    losses.append(loss)  # noqa: AGL101" in nb.text(1) and nb.text(1).startswith("%%time\n")
    assert await diagnostics(client, nb.cell_uri(1), 2) == []
    nb.close()


async def test_cells_are_one_program_through_edits_and_structure_changes(client: LanguageClient, project: Path) -> None:
    nb = Notebook(client, project / "flow.ipynb", [("python", "import torch\nhistory = []"), ("markdown", "Now train."), ("python", "model = torch.nn.Linear(2, 1)")])
    assert await diagnostics(client, nb.cell_uri(2), 1) == []
    # A new cell misuses what the first cell defined.
    new = nb.insert(3, "for i in range(3):\n    loss = model(torch.randn(4, 2)).sum()\n    loss.backward()\n    history.append(loss)")
    (d,) = await diagnostics(client, new, 1)
    assert d.code == "AGL101" and d.range.start.line == 3
    # Deleting the cell clears its diagnostics.
    nb.delete(3)
    assert await diagnostics(client, new) == []
    nb.close()


async def test_fix_all_edits_every_cell_it_needs(client: LanguageClient, project: Path) -> None:
    cells = [
        ("python", "from torch import nn\nmodel = nn.Linear(2, 1)"),
        ("python", "def evaluate(model, loader):\n    model.eval()\n    total = 0.0\n    for x in loader:\n        total += float(model(x).sum())\n    return total"),
    ]
    nb = Notebook(client, project / "eval.ipynb", cells)
    (d,) = await diagnostics(client, nb.cell_uri(1), 1)
    assert d.code == "AGL301"
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    params = types.CodeActionParams(
        types.TextDocumentIdentifier(nb.cell_uri(1)), whole, types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])
    )
    # The decorator is an unsafe fix (callers may want the graph).
    assert not await client.text_document_code_action_async(params)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"unsafeFixes": True, "debounceMs": 20}}))
    (fix_all,) = await client.text_document_code_action_async(params)
    resolved = await client.code_action_resolve_async(fix_all)
    assert {c.text_document.uri for c in resolved.edit.document_changes} == {nb.cell_uri(0), nb.cell_uri(1)}
    nb.apply(resolved.edit)
    assert nb.text(0) == "from torch import nn\nimport torch\nmodel = nn.Linear(2, 1)"
    assert nb.text(1).startswith("@torch.no_grad()\ndef evaluate")
    assert await diagnostics(client, nb.cell_uri(1), 2) == []
    nb.close()
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"autograd-lint": {"debounceMs": 20}}))
