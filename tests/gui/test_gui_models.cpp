// gui/models without widgets: every item model under QAbstractItemModelTester (fed real core values, then
// changed), the scenario edits that go through core's parser, sessions, predictions and the sweep's cells.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

#include "core/paths.h"
#include "core/trace.h"
#include "gui/models/compare_models.h"
#include "gui/models/fit_models.h"
#include "gui/models/hardware_model.h"
#include "gui/models/jobs.h"
#include "gui/models/key_value_model.h"
#include "gui/models/scenario.h"
#include "gui/models/session.h"
#include "gui/models/timeline_model.h"

using namespace zs;
using namespace zs::gui;

namespace {

Scenario scenario(const char* m, const char* h, const char* c) {
  auto s = load_scenario({m, h, c});
  if (!s) qFatal("load_scenario(%s, %s, %s): %s", m, h, c, s.error().message.c_str());
  return *s;
}

// A small hand-made trace: two ranks, three streams, overlapping comm ops, memory samples.
core::Trace small_trace() {
  core::Trace t;
  t.source = "test";
  t.step_time_s = 1.0;
  auto ev = [&](uint32_t op, int32_t rank, core::Stream s, core::OpKind k, core::Phase ph, double a, double b) {
    core::TraceEvent e;
    e.op = op, e.rank = rank, e.stream = s, e.kind = k, e.phase = ph, e.start_s = a, e.end_s = b, e.layer = 0;
    e.bytes = 1 << 20, e.flops = 1e9;
    t.events.push_back(e);
  };
  for (int32_t r = 0; r < 2; ++r) {
    ev(0, r, core::Stream::compute, core::OpKind::forward, core::Phase::forward, 0.0, 0.2);
    ev(1, r, core::Stream::compute, core::OpKind::backward, core::Phase::backward, 0.3, 0.7);
    ev(2, r, core::Stream::comm, core::OpKind::allgather, core::Phase::forward, 0.1, 0.5);
    ev(3, r, core::Stream::comm, core::OpKind::reduce_scatter, core::Phase::backward, 0.2, 0.3);  // inside op 2
    ev(4, r, core::Stream::cpu_adam, core::OpKind::adam_cpu, core::Phase::optimizer, 0.7, 1.0);
    ev(5, r, core::Stream::compute, core::OpKind::alloc, core::Phase::forward, 0.0, 0.0);  // ledger: no lane
  }
  for (int i = 0; i <= 10; ++i) t.memory.push_back({i * 0.1, {int64_t{i} << 30, int64_t{2} << 30, 0}});
  t.peak_bytes = {int64_t{10} << 30, int64_t{2} << 30, 0};
  return t;
}

}  // namespace

class TestGuiModels : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void memoryTree() {
    MemoryTreeModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    for (const char* c : {"zero3-offload-cpu", "zero3-offload-nvme", "zero0"}) {
      const Scenario s = scenario("gpt2-1.5b", "dgx2", c);
      m.set_report(core::memory_model(s.model, s.hardware, s.strategy));
      QCOMPARE(m.rowCount(), 3);
      for (int t = 0; t < 3; ++t) {
        const QModelIndex tier = m.index(t, 0);
        const auto& tr = m.report().tiers[static_cast<size_t>(t)];
        QCOMPARE(m.rowCount(tier), static_cast<int>(tr.items.size()));
        qint64 sum = 0;
        for (int i = 0; i < m.rowCount(tier); ++i) sum += m.index(i, 0, tier).data(BytesRole).toLongLong();
        QCOMPARE(sum, static_cast<qint64>(tr.required_bytes));  // the tree shows every item once
        QCOMPARE(m.index(t, MemoryTreeModel::Bytes).data().toString(), QString::fromStdString(core::format_bytes(tr.required_bytes)));
        QCOMPARE(tier.data(FitsRole).toBool(), tr.fits());
      }
    }
  }

  void suggestions() {
    SuggestionModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const Scenario s = scenario("llama2-13b", "v100-32gb-workstation", "zero2-offload-cpu");
    const auto r = core::memory_model(s.model, s.hardware, s.strategy);
    QVERIFY(!r.fits);
    m.set_suggestions(core::suggest_fixes(s.model, s.hardware, s.strategy));
    QVERIFY(m.rowCount() > 0);
    // "Applicable with one click": the first fix that fits, installed as is, makes the config fit.
    int first_fit = -1;
    for (int i = 0; i < m.rowCount() && first_fit < 0; ++i)
      if (m.index(i).data(FitsRole).toBool()) first_fit = i;
    QVERIFY(first_fit >= 0);
    const Scenario fixed = with_strategy(s, m.suggestion(first_fit).strategy);
    QVERIFY(core::memory_model(fixed.model, fixed.hardware, fixed.strategy).fits);
    // As FixesJob hands them to Explore, each fix's patch is folded into its config: applied, then edited by a knob,
    // the edit stands (the patch is not applied again over it).
    FixesJob job;
    QSignalSpy done(&job, &Job::done);
    job.start(s);
    QVERIFY(done.wait(30000));
    QCOMPARE(job.result().size(), static_cast<size_t>(m.rowCount()));
    for (const auto& f : job.result()) {
      QVERIFY(f.strategy.run.config_changes.empty());
      bool sets_stage = false;
      for (const auto& c : f.changes) sets_stage = sets_stage || c.path == "zero_optimization.stage";
      if (!sets_stage) continue;
      auto back = with_knob(with_strategy(s, f.strategy), Knob::stage, std::to_string(s.strategy.zero.stage));
      QVERIFY(back.ok());
      QCOMPARE(back->strategy.zero.stage, s.strategy.zero.stage);
    }
    m.set_suggestions({});
    QCOMPARE(m.rowCount(), 0);
  }

  // The verdict banner says why a config DeepSpeed refuses does not fit, not "short by" a negative amount.
  void verdictNamesDeepSpeedsRefusal() {
    const Scenario s = scenario("llama2-13b", "dgx-a100-80gb", "zero3-offload-nvme");
    const auto r = core::memory_model(s.model, s.hardware, s.strategy);
    QVERIFY(!r.fits);
    QVERIFY(!r.problems.empty());
    const std::string text = verdict_text(r);
    QVERIFY2(text.find("DeepSpeed refuses it: " + r.problems.front()) != std::string::npos, text.c_str());
    QVERIFY2(text.find("short by") == std::string::npos, text.c_str());
  }

  void hardwareModel() {
    HardwareModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    std::vector<std::string> edited;
    m.on_edited([&](const std::string& k) { edited.push_back(k); });
    for (const auto& path : core::shipped_inputs(core::InputKind::hardware)) {
      auto h = core::load_hardware(path);
      QVERIFY2(h.ok(), path.c_str());
      m.set_hardware(*h);
      QCOMPARE(m.field("gpu.memory_GiB").toDouble(), h->gpu.memory_GiB);
    }
    QVERIFY(m.rowCount() >= 5);
    QVERIFY(m.set_field("gpu.memory_GiB", QStringLiteral("40")));
    QCOMPARE(m.hardware().gpu.memory_GiB, 40.0);
    QVERIFY(m.set_field("cpu.cores", QStringLiteral("64")));
    QCOMPARE(m.hardware().cpu.cores, int64_t{64});
    QVERIFY(!m.set_field("cpu.cores", QStringLiteral("2.5")));   // a count
    QVERIFY(!m.set_field("gpu.memory_GiB", QStringLiteral("-1")));
    QVERIFY(!m.set_field("gpus_per_node", QStringLiteral("0")));  // at least one
    QVERIFY(!m.set_field("no.such.field", QStringLiteral("1")));
    QVERIFY(m.set_field("measured.gemm_efficiency", QStringLiteral("0.6")));
    QCOMPARE(*m.hardware().measured.gemm_efficiency, 0.6);
    QVERIFY(m.set_field("measured.gemm_efficiency", QString()));  // empty clears a measured figure
    QVERIFY(!m.hardware().measured.gemm_efficiency.has_value());
    QCOMPARE(edited.size(), size_t{4});
    // Only value cells of fields are editable.
    const QModelIndex gpu_group = m.index(1, 0);
    QVERIFY(!(m.flags(gpu_group) & Qt::ItemIsEditable));
    QVERIFY(m.flags(m.index(1, HardwareModel::Value, gpu_group)) & Qt::ItemIsEditable);
    QVERIFY(!(m.flags(m.index(1, HardwareModel::Field, gpu_group)) & Qt::ItemIsEditable));
  }

  void keyValueModel() {
    KeyValueModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const Scenario s = scenario("gpt2-1.5b", "dgx-a100-80gb", "zero2");
    m.set_sections(model_sections(s.model, s.strategy));
    QCOMPARE(m.rowCount(), 2);
    Prediction p;
    p.step_time_s = 2, p.forward_s = 0.5, p.backward_s = 1, p.optimizer_s = 0.5, p.tokens_per_s = 1e5;
    p.exposed = {{"cpu_adam", "CPU Adam", 0.5, 0.4}};
    p.required = {{"NVMe read", 12, 5, true}};
    p.bottleneck = "CPU Adam: 20% of the step, exposed";
    p.bottleneck_key = "cpu_adam";
    m.set_sections(summary_sections(p));
    QVERIFY(m.rowCount() >= 5);
    const int without_breakdown = m.rowCount();
    p.cpu_threads = "1 per rank x 8 ranks (8 running)";
    p.passes = {{"cpu_adam", "CPU Adam (DeepSpeedCPUAdam)", "CPU Adam", 0.4, 0.4, 24.0, 0.86, 1}};
    p.copies = {{"d2h.grads", "fp32 gradients GPU→host", "fp32 gradients GPU→host", 0.2, 0.1, 20.0, 0, 3}};
    p.advice = {{"--schedule dpu", "the CPU optimizer step", 1.6, 0.4}};
    m.set_sections(summary_sections(p));
    QCOMPARE(m.rowCount(), without_breakdown + 4);  // CPU threads, passes, copies, advice
    bool advised = false;
    for (int r = 0; r < m.rowCount(); ++r)
      if (m.index(r, 0).data().toString().startsWith(QStringLiteral("To hide")))
        advised = m.index(0, 1, m.index(r, 0)).data().toString().contains(QStringLiteral("1.6"));
    QVERIFY(advised);
    p.feasible = false;
    p.infeasible_reason = "gpu overflows";
    m.set_sections(summary_sections(p));
    QCOMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, 1, m.index(0, 0)).data(FitsRole).toBool(), false);
  }

  void timelineModel() {
    TimelineModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto t = std::make_shared<const core::Trace>(small_trace());
    m.set_trace(t, 0);
    QCOMPARE(m.lanes(), 3);  // compute, comm, cpu_adam of rank 0; the alloc op has no lane
    QCOMPARE(m.ranks(), 2);
    QCOMPARE(m.index(0, 0).data().toString(), QStringLiteral("compute"));
    QCOMPARE(m.end_s(), 1.0);
    // Busy time is the union of a lane's intervals: comm 0.1-0.5 with 0.2-0.3 inside it.
    QCOMPARE(m.lane(1).busy_s, 0.4);
    // Hover: the event under t, with overlap inside a lane handled by the running max.
    QCOMPARE(m.event_at(1, 0.45, 0.001), 2);
    QCOMPARE(m.event_at(0, 0.25, 0.001), -1);   // compute gap between 0.2 and 0.3
    QCOMPARE(m.event_at(0, 0.25, 0.06), 0);     // within tolerance: the nearer event
    QVERIFY(m.event_text(2).contains(QStringLiteral("allgather")));
    const auto [first, last] = m.visible(0, 0.25, 0.35);
    QCOMPARE(last - first, size_t{1});
    m.set_trace(t, -1);
    QCOMPARE(m.lanes(), 6);
    QVERIFY(m.index(3, 0).data().toString().startsWith(QStringLiteral("rank 1")));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void phaseModel() {
    PhaseModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    Prediction p, q;
    p.forward_s = 1, p.backward_s = 2, p.optimizer_s = 1, p.step_time_s = 4;
    q.forward_s = 1.25, q.backward_s = 2, q.optimizer_s = 0.75, q.step_time_s = 4;
    p.exposed = {{"nvme_read", "NVMe read", 1, 0.5}};
    m.set_rows(phase_rows(p, q));
    QCOMPARE(m.rowCount(), 5);
    QCOMPARE(m.index(0, PhaseModel::Error).data(ValueRole).toDouble(), -0.2);  // (1 − 1.25) / 1.25
    QCOMPARE(m.index(0, PhaseModel::Error).data().toString(), QStringLiteral("-20%"));
    QCOMPARE(m.index(2, PhaseModel::Error).data().toString(), QStringLiteral("+33%"));
    QCOMPARE(m.index(4, PhaseModel::Measured).data().toString(), QStringLiteral("—"));  // absent in the measurement
    QCOMPARE(m.max_abs_error(), 1.0 / 3.0);
    QCOMPARE(m.largest_phase_error()->label, QStringLiteral("optimizer"));
    // An exposure measured where none was predicted is −100%: in the rows, not in the headline's phase.
    q.exposed = {{"gpu_collectives", "GPU collectives", 1, 5e-6}};
    m.set_rows(phase_rows(p, q));
    QCOMPARE(m.max_abs_error(), 1.0);
    QCOMPARE(m.largest_phase_error()->label, QStringLiteral("optimizer"));
    QCOMPARE(m.largest_phase_error()->error(), 1.0 / 3.0);
    m.set_rows({});
    QVERIFY(m.largest_phase_error() == nullptr);
    // The warnings on two traces are `zerosim compare`'s (core::compare_traces).
    core::Trace a, b;
    a.schedule = b.schedule = "deepspeed";
    QVERIFY(trace_warnings(a, b).isEmpty());
    b.schedule = "zerosim";
    b.events.push_back({});
    QCOMPARE(trace_warnings(a, b), QStringLiteral("schedules differ: deepspeed vs zerosim; the traces have 0 and 1 "
                                                  "rank-0 events: not the same Plan?"));
  }

  void sweepModel() {
    SweepModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    SweepSpec sp{{Knob::micro_batch, {"1", "2", "4"}}, {Knob::offload_optimizer, {"none", "cpu"}}};
    m.reset(sp);
    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.columnCount(), 3);
    QCOMPARE(m.headerData(2, Qt::Horizontal).toString(), QStringLiteral("4"));
    QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
    SweepCell a;
    a.state = CellState::done, a.feasible = true, a.tokens_per_s = 100;
    m.set_cell(0, a);
    SweepCell b = a;
    b.tokens_per_s = 300;
    m.set_cell(4, b);  // row 1, column 1
    SweepCell bad;
    bad.state = CellState::done;
    bad.reason = "DOES NOT FIT — gpu needs 90 GiB, has 80 GiB";
    m.set_cell(5, bad);
    QCOMPARE(m.done(), 3);
    QCOMPARE(m.best(), 300.0);
    QVERIFY(changed.count() >= 3);
    QCOMPARE(m.index(1, 1).data(SweepModel::NormRole).toDouble(), 1.0);
    QCOMPARE(m.index(0, 0).data(SweepModel::NormRole).toDouble(), 0.0);
    QCOMPARE(m.index(1, 2).data().toString(), QStringLiteral("✕"));
    QVERIFY(m.index(1, 2).data(Qt::ToolTipRole).toString().contains(QStringLiteral("gpu needs 90 GiB")));
    QCOMPARE(m.index(0, 1).data().toString(), QStringLiteral("…"));
    m.set_cell(99, a);  // out of range: ignored
    m.reset({{Knob::stage, {"1", "2", "3"}}, {Knob::nodes, {"1"}}});
    QCOMPARE(m.done(), 0);
  }

  void knobsGoThroughCore() {
    const Scenario s = scenario("gpt2-1.5b", "dgx2", "zero3-offload-cpu");
    auto mb = with_knob(s, Knob::micro_batch, "4");
    QVERIFY(mb.ok());
    QCOMPARE(mb->strategy.micro_batch_per_gpu, int64_t{4});
    QCOMPARE(mb->strategy.train_batch_size, 4 * s.strategy.gradient_accumulation_steps * s.strategy.world());
    auto st2 = with_knob(s, Knob::stage, "2");  // offload_param is stage-3 only: it goes to none
    QVERIFY2(st2.ok(), st2.ok() ? "" : st2.error().message.c_str());
    QCOMPARE(st2->strategy.zero.stage, 2);
    QVERIFY(st2->strategy.zero.offload_param.device == core::OffloadDevice::none);
    QVERIFY(!st2->strategy.zero.overlap_comm);  // the stage's own default
    auto nv = with_knob(s, Knob::offload_param, "nvme");
    QVERIFY(nv.ok());
    QCOMPARE(nv->strategy.zero.offload_param.nvme_path, std::string("/local_nvme"));
    auto bad = with_knob(st2.value(), Knob::offload_param, "cpu");  // core refuses it under stage 2
    QVERIFY(!bad.ok());
    QVERIFY(QString::fromStdString(bad.error().message).contains(QStringLiteral("stage 3")));
    QVERIFY(!with_knob(s, Knob::offload_optimizer, "nvmee").ok());
    QVERIFY(!with_knob(s, Knob::micro_batch, "0").ok());
    QVERIFY(!with_knob(s, Knob::gpus_per_node, "17").ok());  // dgx2 has 16
    auto on = with_knob(s, Knob::checkpointing, "on");
    QVERIFY(on.ok() && on->strategy.activation_checkpointing.enabled);
    auto off = with_knob(*on, Knob::checkpointing, "off");
    QVERIFY(off.ok() && !off->strategy.activation_checkpointing.enabled);
    auto rb = with_knob(s, Knob::reduce_bucket_size, "5e7");
    QVERIFY(rb.ok());
    QCOMPARE(rb->strategy.zero.reduce_bucket_size, int64_t{50000000});
    auto sched = with_knob(s, Knob::schedule, "overlap");
    QVERIFY(sched.ok() && sched->schedule == core::Schedule::overlap);
    for (const auto& k : knobs()) QVERIFY(parse_knob(k.key) == k.knob);
    QVERIFY(!parse_knob("no_such_knob"));
  }

  void dsConfigTextRoundTrips() {
    // Every shipped config, written back and re-read, resolves to the same strategy.
    for (const auto& c : core::shipped_inputs(core::InputKind::deepspeed)) {
      const Scenario s = scenario("gpt2-1.5b", "dgx2", c.c_str());
      auto again = with_ds_config_text(s, ds_config_text(s.strategy), "roundtrip");
      QVERIFY2(again.ok(), again.ok() ? "" : again.error().message.c_str());
      QCOMPARE(core::resolved_config_json(again->strategy), core::resolved_config_json(s.strategy));
      QCOMPARE(again->strategy.activation_checkpointing.enabled, s.strategy.activation_checkpointing.enabled);
    }
  }

  void sessionRoundTrip() {
    Scenario s = scenario("gpt2-1.5b", "dgx2", "zero2-offload-cpu");
    s = *with_knob(s, Knob::micro_batch, "2");
    s = *with_knob(s, Knob::checkpointing, "on");
    s.hardware.gpu.memory_GiB = 16;
    s.schedule = core::Schedule::dpu;
    Session out = capture(s);
    QCOMPARE(out.hardware_edits.size(), size_t{1});
    QCOMPARE(out.hardware_edits.at("gpu.memory_GiB"), std::string("16"));
    out.tab = "sweep";
    out.sweep = {{Knob::stage, {"1", "2"}}, {Knob::nodes, {"1", "2", "4"}}};
    out.trace_path = "/tmp/x.json";
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.zsession")).toStdString();
    QVERIFY(write_session(out, path).ok());
    auto in = read_session(path);
    QVERIFY2(in.ok(), in.ok() ? "" : in.error().message.c_str());
    QCOMPARE(in->tab, std::string("sweep"));
    QCOMPARE(in->sweep.y.values.size(), size_t{3});
    QVERIFY(in->sweep.x.knob == Knob::stage);
    auto back = restore(*in);
    QVERIFY2(back.ok(), back.ok() ? "" : back.error().message.c_str());
    QCOMPARE(back->hardware.gpu.memory_GiB, 16.0);
    QCOMPARE(back->strategy.micro_batch_per_gpu, int64_t{2});
    QVERIFY(back->strategy.activation_checkpointing.enabled);
    QVERIFY(back->schedule == core::Schedule::dpu);
    QCOMPARE(core::resolved_config_json(back->strategy), core::resolved_config_json(s.strategy));
    // Strict reading: an unknown key names the file and the nearest valid key.
    auto bad = session_from_json(R"({"format": "zerosim-gui-session", "model": "tiny", "hardware": "dgx2",
                                     "ds_config": "zero2", "tabb": "explore"})",
                                 "bad.zsession");
    QVERIFY(!bad.ok());
    QVERIFY(QString::fromStdString(bad.error().message).contains(QStringLiteral("bad.zsession")));
    QVERIFY(QString::fromStdString(bad.error().message).contains(QStringLiteral("tab")));
    Session edits = out;
    edits.hardware_edits["gpu.memory_GiB"] = "lots";
    QVERIFY(!restore(edits).ok());
  }

  void sweepCells() {
    const Scenario base = scenario("gpt2-1.5b", "dgx-a100-80gb", "zero3-offload-cpu");
    SweepSpec sp{{Knob::offload_param, {"none", "cpu"}}, {Knob::stage, {"2", "3"}}};
    int predicted = 0;
    Predictor fake = [&](const Scenario& s) -> core::Result<Prediction> {
      ++predicted;
      Prediction p;
      p.tokens_per_s = static_cast<double>(s.strategy.zero.stage * 1000);
      return p;
    };
    // Stage is applied first, so offload_param=cpu under stage 2 is "invalid", not a crash.
    const SweepCell ok = evaluate_cell(base, sp, 1, 1, fake);
    QVERIFY(ok.feasible);
    QCOMPARE(ok.tokens_per_s, 3000.0);
    const SweepCell invalid = evaluate_cell(base, sp, 1, 0, fake);
    QVERIFY(!invalid.feasible);
    QVERIFY(invalid.reason.rfind("invalid", 0) == 0);
    // Infeasible by the memory model: the predictor is not asked.
    const Scenario big = scenario("gpt3-175b", "dgx-a100-80gb", "zero2");
    predicted = 0;
    const SweepCell no = evaluate_cell(big, {{Knob::micro_batch, {"1"}}, {Knob::grad_accum, {"1"}}}, 0, 0, fake);
    QVERIFY(!no.feasible);
    QVERIFY(no.reason.find("DOES NOT FIT") != std::string::npos);
    QCOMPARE(predicted, 0);
    QVERIFY(parse_axis_values(Knob::micro_batch, "1, 2 4,4") == (std::vector<std::string>{"1", "2", "4"}));
    QVERIFY(parse_axis_values(Knob::offload_optimizer, "") == knob_info(Knob::offload_optimizer).choices);
  }

  void predictionAndMeasured() {
    if (!simulator_available()) QSKIP("built without SimGrid: no simulator");
    const Scenario s = scenario("gpt2-124m", "dgx-a100-80gb", "zero3-offload-cpu");
    auto p = predict(s);
    QVERIFY2(p.ok(), p.ok() ? "" : p.error().message.c_str());
    QVERIFY(p->feasible);
    QVERIFY(p->step_time_s > 0);
    QVERIFY(!p->trace.events.empty());
    QVERIFY(p->tokens_per_s > 0);
    QVERIFY(std::abs(p->forward_s + p->backward_s + p->optimizer_s - p->step_time_s) < 1e-9 * p->step_time_s);
    // The prediction's own trace read as a measurement gives the same numbers.
    auto m = measured(*p, p->trace);
    QVERIFY(m.ok());
    QCOMPARE(m->step_time_s, p->step_time_s);
    QCOMPARE(m->forward_s, p->forward_s);
    PhaseModel pm;
    pm.set_rows(phase_rows(*p, *m));
    QCOMPARE(pm.max_abs_error(), 0.0);
    // A trace of another plan is refused, not misread.
    core::Trace other = p->trace;
    other.events.back().op = 1u << 30;
    QVERIFY(!measured(*p, other).ok());
    const auto spans = phase_spans(p->trace);
    QVERIFY(spans[0] > 0 && spans[1] > 0);
    // Does not fit: a result with the reason, no trace.
    auto big = predict(scenario("gpt3-175b", "dgx-a100-80gb", "zero2"));
    QVERIFY(big.ok());
    QVERIFY(!big->feasible);
    QVERIFY(!big->infeasible_reason.empty());
  }

  void simulationJob() {
    if (!simulator_available()) QSKIP("built without SimGrid: no simulator");
    SimulationJob job;
    QSignalSpy done(&job, &Job::done), failed(&job, &Job::failed), progress(&job, &Job::progress);
    job.start(scenario("gpt2-124m", "dgx-a100-80gb", "zero2-offload-cpu"));
    QVERIFY(job.running());
    QVERIFY(done.wait(60000));
    QCOMPARE(failed.count(), 0);
    QVERIFY(progress.count() >= 1);
    QVERIFY(job.has_result());
    QVERIFY(job.result().step_time_s > 0);
    QVERIFY(!job.running());
    // Cancel answers at once; the old run's results never arrive.
    job.start(scenario("gpt2-1.5b", "dgx-a100-80gb", "zero3-offload-cpu"));
    job.cancel();
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.at(0).at(0).toString(), QStringLiteral("cancelled"));
    QTest::qWait(300);
    QCOMPARE(done.count(), 1);
  }
};

QTEST_MAIN(TestGuiModels)
#include "test_gui_models.moc"
