// The lifetime every recur HTTP process shares (the OpenAI server and the roles: router,
// prefill, decode and encode workers): stop signals, binding, the listen backlog, serving until
// SIGTERM/SIGINT. One place, so a fix here (e.g. the backlog) reaches every process.
#pragma once

#include <functional>
#include <string_view>

#include "core/status.h"
#include "serve/http_front.h"
#include "serve/serve.h"

namespace recur::serve {

// Blocks SIGTERM/SIGINT (taken by serve_until_signal's sigwait) in this thread and the threads
// it starts later, and ignores SIGPIPE (a client that left must not kill the server). Call it
// first, before any thread starts.
void block_stop_signals();

// The front's options from the command line's: --http-threads, --max-body, --read-timeout-s.
FrontOptions front_options(const ServeOptions& options);

// Binds options.host:options.port (0: any free port), raises the listen backlog, prints
// "listening on http://HOST:PORT (<what>)" on stderr and serves through the front (http_front.h)
// until SIGTERM/SIGINT; then runs `on_stop`, stops the front and waits for the requests under way.
Status serve_until_signal(HttpFront& server, const ServeOptions& options, const FrontOptions& front,
                          std::string_view what, const std::function<void()>& on_stop = nullptr);

}  // namespace recur::serve
