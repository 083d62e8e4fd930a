-- wrk script of the HTTP benchmark (benchmarks/http_load.py sets the environment):
--   BENCH_MODE      mixed | append | hello | get (GET each path with the key)
--   BENCH_KEY       the API key (not sent in hello mode)
--   BENCH_PATHS     comma-separated session paths (".../sessions/<id>/"), or "/hello/"
--   BENCH_DELAY_MS  mean pause between a connection's requests (exponential, 0 = none): paces
--                   the offered rate to about connections * 1000 / BENCH_DELAY_MS requests/s
-- Prints one line "BENCH_JSON {...}" with the counts and latency percentiles.
local mode = os.getenv("BENCH_MODE")
local key = os.getenv("BENCH_KEY") or ""
local mean_delay = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
local paths = {}
for p in string.gmatch(os.getenv("BENCH_PATHS"), "[^,]+") do paths[#paths + 1] = p end

local headers = {["Content-Type"] = "application/json"}
if mode ~= "hello" then headers["Authorization"] = "Api-Key " .. key end
local append_body = '{"messages": [{"role": "user", "content": "What changed since yesterday?"}]}'
local round_body = '{"state": {"step": 1, "plan": "look up, summarise, answer", "memory": [1, 2, 3]}}'
-- Mixed agent traffic: of every 10 requests, 4 append a message, 2 save a round, 2 export the
-- latest round, 2 read the 20 most recent messages.
local mix = {"append", "append", "append", "append", "round", "round", "latest", "latest", "recent", "recent"}

local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("thread_id", counter)
end

function init(args)
  math.randomseed(thread_id * 7919)
end

function request()
  local path = paths[math.random(#paths)]
  local op = mode
  if mode == "mixed" then op = mix[math.random(#mix)] end
  if op == "append" then return wrk.format("POST", path .. "messages/", headers, append_body)
  elseif op == "round" then return wrk.format("POST", path .. "rounds/", headers, round_body)
  elseif op == "latest" then return wrk.format("GET", path .. "rounds/latest/", headers)
  elseif op == "recent" then return wrk.format("GET", path .. "messages/?recent=20", headers)
  else return wrk.format("GET", path, headers) end  -- hello, get
end

if mean_delay > 0 then
  function delay()
    return -math.log(1 - math.random()) * mean_delay
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests": %d, "duration_us": %d, "errors": {"connect": %d, "read": %d, "write": %d, ' ..
    '"status": %d, "timeout": %d}, "latency_us": {"p50": %d, "p95": %d, "p99": %d, "max": %d, "mean": %.1f}}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max, latency.mean))
end
