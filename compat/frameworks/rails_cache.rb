# Rails' ActiveSupport::Cache::RedisCacheStore (Debian's ruby-activesupport
# over ruby-redis), with and without a namespace, doing what a Rails app
# does: read/write/fetch, read_multi/write_multi, increment/decrement,
# exist?/delete, delete_matched (SCAN) and clear (SCAN + DEL under a
# namespace, FLUSHDB without one).
#
# The store swallows Redis errors by default and answers as on a miss; the
# error handler here counts each as a failure, so a refused command is seen.
#
# With a namespace every key is KEY_PREFIX + "rails:" + name; without one
# the app puts the route prefix in its names: KEY_PREFIX + "rails-flat:" + name.

require "active_support"
require "active_support/cache"
require "active_support/cache/redis_cache_store"
require "redis"

URL = ENV.fetch("REDIS_URL") { abort "REDIS_URL is not set (redis://127.0.0.1:PORT/0)" }
PREFIX = ENV.fetch("KEY_PREFIX", "")

$passed = 0
$failed = 0
$step = ""

def fail_check(what)
  $failed += 1
  puts "FAIL rails #{$step}: #{what}"
  $stdout.flush
end

def eq(what, got, want)
  if got == want
    $passed += 1
  else
    fail_check("#{what}: got #{got.inspect}, want #{want.inspect}")
  end
end

def ok(what, cond, detail = "")
  cond ? $passed += 1 : fail_check(detail.empty? ? what : "#{what}: #{detail}")
end

# step runs one named step; an exception fails it and the next step runs.
def step(name)
  $step = name
  yield
rescue StandardError => e
  fail_check("raised #{e.class}: #{e.message} (at #{e.backtrace.first})")
end

# Errors the store swallowed: each is a failure of the step that caused it.
ERRORS = ->(method:, returning:, exception:) { fail_check("store swallowed #{exception.class} in #{method}: #{exception.message}") }

raw = Redis.new(url: URL)

# run does the same checks on one store; full(name) is the key Redis holds
# for the store's name, and name(n) the name the app uses.
def run(label, store, raw, name, full)
  step("#{label} write/read") do
    ok("write", store.write(name["user:1"], { "name" => "ada", "langs" => %w[en fr] }))
    eq("read", store.read(name["user:1"]), { "name" => "ada", "langs" => %w[en fr] })
    eq("read missing", store.read(name["nope"]), nil)
    eq("exist?", store.exist?(name["user:1"]), true)
    eq("stored under its key", raw.exists?(full[name["user:1"]]), true)
  end

  step("#{label} fetch") do
    calls = 0
    2.times { store.fetch(name["report"], expires_in: 60) { calls += 1; "computed" } }
    eq("fetch value", store.fetch(name["report"]) { "other" }, "computed")
    eq("block ran once", calls, 1)
    ttl = raw.ttl(full[name["report"]])
    ok("expires_in sets the ttl", ttl > 0 && ttl <= 60, "ttl #{ttl}")
    eq("fetch force", store.fetch(name["report"], force: true) { "fresh" }, "fresh")
  end

  step("#{label} write_multi/read_multi") do
    store.write_multi({ name["m1"] => 1, name["m2"] => "two", name["m3"] => [3] })
    eq("read_multi", store.read_multi(name["m1"], name["m2"], name["m3"], name["m-absent"]),
       { name["m1"] => 1, name["m2"] => "two", name["m3"] => [3] })
    store.write_multi({ name["e1"] => "a", name["e2"] => "b" }, expires_in: 30)
    ttl = raw.ttl(full[name["e2"]])
    ok("write_multi with expires_in", ttl > 0 && ttl <= 30, "ttl #{ttl}")
    eq("fetch_multi", store.fetch_multi(name["m1"], name["f-new"]) { |k| "made #{k}" },
       { name["m1"] => 1, name["f-new"] => "made #{name['f-new']}" })
  end

  step("#{label} increment/decrement") do
    store.delete(name["n"])
    eq("increment of a missing key", store.increment(name["n"]), 1)
    eq("increment 5", store.increment(name["n"], 5), 6)
    eq("decrement 2", store.decrement(name["n"], 2), 4)
    eq("raw read", store.read(name["n"], raw: true).to_i, 4)
    store.increment(name["n-ttl"], 1, expires_in: 60)
    ttl = raw.ttl(full[name["n-ttl"]])
    ok("increment with expires_in", ttl > 0 && ttl <= 60, "ttl #{ttl}")
  end

  step("#{label} increment under concurrency") do
    store.delete(name["hits"])
    threads = 8.times.map { Thread.new { 25.times { store.increment(name["hits"]) } } }
    threads.each(&:join)
    eq("8 threads x 25 increment", store.read(name["hits"], raw: true).to_i, 200)
  end

  step("#{label} expires_in honoured") do
    store.write(name["short"], "v", expires_in: 1)
    eq("readable before expiry", store.read(name["short"]), "v")
    pttl = raw.pttl(full[name["short"]])
    ok("server ttl", pttl > 0 && pttl <= 1000, "pttl #{pttl}")
    sleep 1.5
    eq("gone after expiry", store.read(name["short"]), nil)
    eq("gone from the server", raw.exists?(full[name["short"]]), false)
  end

  step("#{label} delete") do
    store.write(name["del"], 1)
    ok("delete", store.delete(name["del"]))
    eq("gone", store.read(name["del"]), nil)
  end

  step("#{label} delete_matched") do
    %w[pat:1 pat:2 pat:3].each { |k| store.write(name[k], k) }
    store.write(name["kept:1"], "kept")
    store.delete_matched(name["pat:*"])
    eq("matched keys gone", store.read_multi(name["pat:1"], name["pat:2"], name["pat:3"]), {})
    eq("other key kept", store.read(name["kept:1"]), "kept")
  end
end

# With a namespace: keys are "<namespace>:<name>"; clear deletes what SCAN
# MATCH "<namespace>:*" finds and nothing else.
ns = "#{PREFIX}rails"
store = ActiveSupport::Cache::RedisCacheStore.new(url: URL, namespace: ns, error_handler: ERRORS)
run("namespaced", store, raw, ->(n) { n }, ->(n) { "#{ns}:#{n}" })
step("namespaced clear") do
  raw.set("#{PREFIX}other-app:k", "keep")
  raw.set("#{PREFIX}railsish", "keep")
  store.write("c1", 1)
  store.clear
  eq("cleared", store.read_multi("c1", "user:1", "kept:1"), {})
  eq("nothing left in the namespace", raw.keys("#{ns}:*"), [])
  eq("other app's key kept", raw.get("#{PREFIX}other-app:k"), "keep")
  eq("look-alike key kept", raw.get("#{PREFIX}railsish"), "keep")
end

# Without a namespace: the app's names carry the route prefix; clear is
# FLUSHDB, so it runs last and empties the whole database.
flat = ActiveSupport::Cache::RedisCacheStore.new(url: URL, error_handler: ERRORS)
fp = "#{PREFIX}rails-flat:"
run("flat", flat, raw, ->(n) { fp + n }, ->(n) { n })
step("flat clear") do
  flat.write("#{fp}c1", 1)
  flat.clear
  eq("cleared", flat.read_multi("#{fp}c1", "#{fp}user:1", "#{fp}kept:1"), {})
  eq("nothing left", raw.keys("#{fp}*"), [])
end

puts "rails: #{$passed} checks passed, #{$failed} failed"
exit($failed.zero? ? 0 : 1)
