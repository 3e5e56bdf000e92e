#include "gui/models/jobs.h"

#include <QMetaObject>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace zs::gui {
namespace {
// Workers yield the CPU to the GUI thread: on Linux nice is per thread (and a simulation's forked child inherits
// it), so a sweep on every core still leaves the window responsive.
void lower_priority() {
#ifdef __linux__
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 5);
#endif
}
}  // namespace

Job::Job(QObject* parent) : QObject(parent) {}

Job::~Job() {
  for (auto& w : workers_) w.cancel->store(true);
  reap(true);
}

void Job::reap(bool all) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (all || it->finished->load()) {
      if (it->thread.joinable()) it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void Job::cancel() {
  if (!running_) return;
  for (auto& w : workers_) w.cancel->store(true);
  ++generation_;  // results still queued for the old run are dropped
  running_ = false;
  Q_EMIT failed(QStringLiteral("cancelled"));
}

void Job::Run::post(std::function<void()> gui_side) const {
  Job* j = job;
  const int gen = generation;
  auto c = cancel;
  QMetaObject::invokeMethod(
      j,
      [j, gen, c, f = std::move(gui_side)] {
        if (!c->load() && j->current(gen)) f();
      },
      Qt::QueuedConnection);
}

void Job::Run::progress(double fraction, const QString& what) const {
  Job* j = job;
  post([j, fraction, what] { Q_EMIT j->progress(fraction, what); });
}

void Job::launch(std::function<std::string(const Run&)> body) {
  reap(false);
  for (auto& w : workers_) w.cancel->store(true);  // one run at a time: a new start supersedes the old
  Run run;
  run.cancel = std::make_shared<std::atomic<bool>>(false);
  run.job = this;
  run.generation = ++generation_;
  running_ = true;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  Worker w;
  w.cancel = run.cancel;
  w.finished = finished;
  w.thread = std::thread([run, finished, body = std::move(body)] {
    lower_priority();
    std::string err = body(run);
    Job* j = run.job;
    run.post([j, err] {
      j->running_ = false;
      if (err.empty())
        Q_EMIT j->done();
      else
        Q_EMIT j->failed(QString::fromStdString(err));
    });
    finished->store(true);
  });
  workers_.push_back(std::move(w));
}

void SimulationJob::start(const Scenario& s) {
  launch([this, s](const Run& run) -> std::string {
    auto progress = [](void* ctx, double f, const char* what) {
      static_cast<const Run*>(ctx)->progress(f, QString::fromUtf8(what));
    };
    auto p = predict(s, run.cancel.get(), progress, const_cast<Run*>(&run));
    if (!p) return p.error().message;
    auto shared = std::make_shared<const Prediction>(std::move(*p));
    run.post([this, shared] { result_ = shared; });
    return {};
  });
}

void FixesJob::start(const Scenario& s) {
  launch([this, s](const Run& run) -> std::string {
    auto fixes = std::make_shared<std::vector<core::Suggestion>>(core::suggest_fixes(s.model, s.hardware, s.strategy));
    // A fix's strategy carries its patch as run.config_changes; applied, it becomes the config the knobs edit, so
    // the patch is written into it (else a later edit would apply the patch again over the user's change).
    for (auto& f : *fixes)
      if (auto folded = core::fold_config_changes(f.strategy)) f.strategy = std::move(*folded);
    run.post([this, fixes] { result_ = std::move(*fixes); });
    return {};
  });
}

void SweepJob::start(const Scenario& base, const SweepSpec& spec, Predictor predictor, int threads) {
  spec_ = spec;
  cells_.assign(spec.cells(), SweepCell{});
  finished_ = 0;
  if (!predictor) predictor = [](const Scenario& s) { return predict(s, nullptr, nullptr, nullptr, false); };
  threads = std::max(1, std::min<int>(threads, static_cast<int>(spec.cells())));
  launch([this, base, spec, predictor, threads](const Run& run) -> std::string {
    const size_t nx = spec.x.values.size(), n = spec.cells();
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < n && !run.cancelled(); i = next++) {
        SweepCell c = evaluate_cell(base, spec, i % nx, i / nx, predictor);
        run.post([this, i, c] {
          cells_[i] = c;
          ++finished_;
          Q_EMIT partial(static_cast<int>(i));
          Q_EMIT progress(static_cast<double>(finished_) / static_cast<double>(cells_.size()),
                          QStringLiteral("%1 of %2 cells").arg(finished_).arg(cells_.size()));
        });
      }
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t)
      helpers.emplace_back([&] {
        lower_priority();
        work();
      });
    work();
    for (auto& h : helpers) h.join();
    return run.cancelled() ? "cancelled" : "";
  });
}

}  // namespace zs::gui
