// Jobs: long work (a simulation, a sweep) on a worker thread, so the UI never blocks. A job signals progress,
// partial results (a sweep cell), done and failed — always from the GUI thread (results are handed over through
// queued calls), so receivers need no locking. Cancel answers at once; the worker stops at its next check.
//   auto* job = new SimulationJob(this);
//   connect(job, &Job::done, this, [=] { show(job->result()); });
//   job->start(scenario);
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gui/models/prediction.h"
#include "gui/models/sweep.h"

namespace zs::gui {

class Job : public QObject {
  Q_OBJECT

 public:
  explicit Job(QObject* parent = nullptr);
  ~Job() override;  // cancels, then waits for running workers (a simulation in flight finishes first)

  bool running() const { return running_; }
  // Stops delivering this run's results and emits failed("cancelled"); the worker ends at its next check.
  void cancel();

 Q_SIGNALS:
  void progress(double fraction, const QString& what);
  void partial(int index);
  void done();
  void failed(const QString& message);

 protected:
  // What a worker body sees: its own cancel flag and a way to post work to the GUI thread for this run.
  class Run {
   public:
    bool cancelled() const { return cancel->load(); }
    void post(std::function<void()> gui_side) const;  // runs on the GUI thread unless the run was cancelled
    void progress(double fraction, const QString& what) const;
    std::shared_ptr<std::atomic<bool>> cancel;
    Job* job = nullptr;
    int generation = 0;
  };
  // Starts `body` on a new worker thread. It returns "" on success (done is emitted) or an error message.
  void launch(std::function<std::string(const Run&)> body);
  bool current(int generation) const { return generation == generation_; }

 private:
  void reap(bool all);
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> cancel;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  std::vector<Worker> workers_;
  int generation_ = 0;
  bool running_ = false;
};

// One simulation of a scenario (predict()).
class SimulationJob : public Job {
 public:
  using Job::Job;
  void start(const Scenario& s);
  // Valid after done().
  const Prediction& result() const { return *result_; }
  bool has_result() const { return result_ != nullptr; }
  std::shared_ptr<const Prediction> shared_result() const { return result_; }

 private:
  std::shared_ptr<const Prediction> result_;
};

// The ranked fixes of a scenario (core::suggest_fixes re-runs the memory model per candidate: up to ~0.5 s for the
// largest shipped models), so the verdict shows at once and the fixes follow.
class FixesJob : public Job {
 public:
  using Job::Job;
  void start(const Scenario& s);
  const std::vector<core::Suggestion>& result() const { return result_; }

 private:
  std::vector<core::Suggestion> result_;
};

// A grid of cells (sweep.h), evaluated on `threads` workers; partial(index) per finished cell, row-major
// (index = iy * x.values.size() + ix).
class SweepJob : public Job {
 public:
  using Job::Job;
  // `predictor` defaults to predict() (the simulator).
  void start(const Scenario& base, const SweepSpec& spec, Predictor predictor = {}, int threads = 1);
  const SweepSpec& spec() const { return spec_; }
  const std::vector<SweepCell>& cells() const { return cells_; }
  int finished_cells() const { return finished_; }

 private:
  SweepSpec spec_;
  std::vector<SweepCell> cells_;
  int finished_ = 0;
};

}  // namespace zs::gui
