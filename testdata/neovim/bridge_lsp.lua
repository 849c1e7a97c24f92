-- Drives `bridge serve` through Neovim's own LSP client (vim.lsp), with
-- Neovim's default client capabilities, the way an editor user configures
-- it. Run by cmd/bridge's TestNeovimLSPClient:
--
--   nvim --headless -u NONE -i NONE -n -c 'luafile bridge_lsp.lua'
--
-- It reads BRIDGE_BIN, BRIDGE_DATA_DIR, BRIDGE_CWD and BRIDGE_REPORT from
-- the environment, records what Bridge answered into a JSON report at
-- BRIDGE_REPORT (the Go test checks it), and quits. A failure of the
-- script itself is recorded as report.failure.

local function env(name)
  local v = os.getenv(name)
  assert(v, name .. ' is not set')
  return v
end
local report = { steps = {}, updates = {}, progress = {} }
local timeout = 60000

local function write_report()
  vim.fn.writefile({ vim.fn.json_encode(report) }, env('BRIDGE_REPORT'))
end

local function run()
  vim.lsp.set_log_level('debug')
  local exited
  local id = vim.lsp.start_client({
    name = 'bridge',
    cmd = { env('BRIDGE_BIN'), '--data-dir', env('BRIDGE_DATA_DIR'), 'serve' },
    root_dir = env('BRIDGE_CWD'),
    handlers = {
      -- Bridge's notifications reach a handler named after them.
      ['session/update'] = function(_, params) table.insert(report.updates, params) end,
      ['$/progress'] = function(_, params) table.insert(report.progress, params) end,
    },
    on_exit = function(code, signal) exited = { code = code, signal = signal } end,
  })
  assert(id, 'vim.lsp.start_client returned nothing')
  local client = vim.lsp.get_client_by_id(id)
  if not vim.wait(timeout, function() return client.initialized or exited ~= nil end, 10) or not client.initialized then
    error('initialize did not complete; exit ' .. vim.inspect(exited))
  end
  report.server_capabilities = client.server_capabilities

  -- request answers {err, result} as Neovim's client hands them over.
  local function request(method, params)
    local res, err = client.request_sync(method, params, timeout)
    if not res then error(method .. ': ' .. tostring(err)) end
    table.insert(report.steps, { method = method, err = res.err, result = res.result })
    return res.result, res.err
  end

  local created = request('session/create', { harness = 'fake', cwd = env('BRIDGE_CWD'), title = 'from neovim' })
  local sid = created and created.sessionId
  assert(sid, 'session/create gave no sessionId')
  request('session/prompt', { sessionId = sid, content = { { type = 'text', text = 'say hello from neovim' } } })
  vim.wait(timeout, function() return #report.updates > 0 end, 10)
  request('session/history', { sessionId = sid })
  -- The search index follows the record; wait until it has the turn.
  local hits
  vim.wait(timeout, function()
    local res = client.request_sync('session/search', { query = 'neovim' }, timeout)
    hits = res and res.result and res.result.hits
    return hits ~= nil and #hits > 0
  end, 50)
  request('session/search', { query = 'neovim' })

  -- A turn that runs until cancelled, cancelled with $/cancelRequest.
  -- Neovim 0.7 drops the reply to a request it cancelled (-32800) after
  -- logging it, so the log shows the answer; the next turn shows that the
  -- session is free again.
  local ok, rid = client.request('session/prompt', { sessionId = sid, content = { { type = 'text', text = 'hang' } } },
    function(err, result) report.cancelled_reply = { err = err, result = result } end)
  assert(ok, 'session/prompt (hang) was not sent')
  client.cancel_request(rid)
  local ack = 'Received cancellation ack.*code = %-32800.*id = ' .. rid .. '[^%d]'
  report.cancel_acknowledged = vim.wait(timeout, function()
    for _, line in ipairs(vim.fn.readfile(vim.lsp.get_log_path())) do
      if line:find(ack) then return true end
    end
    return false
  end, 20)
  request('session/prompt', { sessionId = sid, content = { { type = 'text', text = 'say after the cancel' } } })

  request('textDocument/hover', { textDocument = { uri = vim.uri_from_fname(env('BRIDGE_CWD') .. '/x.go') },
    position = { line = 0, character = 0 } })

  client.stop() -- shutdown, then exit
  vim.wait(timeout, function() return exited ~= nil end, 10)
  report.exit = exited or vim.NIL
end

local ok, err = pcall(run)
if not ok then report.failure = tostring(err) end
report.log_path = vim.lsp.get_log_path()
pcall(write_report)
vim.cmd('qall!')
