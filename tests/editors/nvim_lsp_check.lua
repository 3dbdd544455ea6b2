-- Driven by tests/test_nvim.py: a real Neovim, headless, starts
-- `autograd-lint server`, opens a file, waits for the diagnostics, applies
-- the first quick fix through Neovim's own LSP client, waits for the
-- diagnostics to clear, and writes what it saw to $AGL_OUT as JSON. Its
-- waits' deadlines only catch a hang (the suite runs on busy machines).
local out = {}
local function finish(err)
  out.error = err
  local f = assert(io.open(os.getenv('AGL_OUT'), 'w'))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd('qall!')
end

local ok, err = pcall(function()
  -- Offer only the position encoding under test (Neovim offers UTF-8,
  -- UTF-16 and UTF-32 by default, and the server takes the first).
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.general.positionEncodings = { os.getenv('AGL_ENCODING') }
  -- The README's Neovim 0.11+ setup, with the test's command.
  vim.lsp.config('autograd_lint', {
    cmd = vim.json.decode(os.getenv('AGL_CMD')),
    filetypes = { 'python' },
    root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
    capabilities = capabilities,
  })
  vim.lsp.enable('autograd_lint')
  vim.cmd.edit(vim.fn.fnameescape(os.getenv('AGL_FILE')))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.bo[buf].filetype == 'python', 'filetype: ' .. vim.bo[buf].filetype)
  assert(vim.wait(120000, function()
    return #vim.lsp.get_clients({ bufnr = buf, name = 'autograd_lint' }) > 0
  end, 20), 'the language server did not attach')
  local client = vim.lsp.get_clients({ bufnr = buf, name = 'autograd_lint' })[1]
  local client_id = client.id
  out.root_dir = client.root_dir

  local function diags()
    return vim.diagnostic.get(buf, { namespace = vim.lsp.diagnostic.get_namespace(client_id) })
  end
  assert(vim.wait(120000, function() return #diags() > 0 end, 20), 'no diagnostics arrived')
  out.offset_encoding = client.offset_encoding
  out.diagnostics = {}
  for _, d in ipairs(diags()) do
    table.insert(out.diagnostics, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      code = d.code, source = d.source, severity = d.severity, message = d.message,
    })
  end

  local d = diags()[1]
  local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
  params.range = d.user_data.lsp.range
  params.context = { diagnostics = { d.user_data.lsp }, only = { 'quickfix' } }
  local resp = client:request_sync('textDocument/codeAction', params, 120000, buf)
  assert(resp and not resp.err, 'codeAction failed: ' .. vim.inspect(resp))
  out.actions = {}
  for _, a in ipairs(resp.result or {}) do table.insert(out.actions, a.title) end
  local action = assert(resp.result[1], 'no code action')
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
  out.fixed_line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
  assert(vim.wait(120000, function() return #diags() == 0 end, 20), 'diagnostics did not clear after the fix')
  out.cleared = true
end)
finish(not ok and tostring(err) or nil)
