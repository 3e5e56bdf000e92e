#include "gui/models/key_value_model.h"

#include <QBrush>
#include <QFont>

#include "core/memory.h"
#include "gui/models/fit_models.h"
#include "gui/models/format.h"

namespace zs::gui {
namespace {
constexpr quintptr kSectionId = 0;
}

void KeyValueModel::set_sections(std::vector<KeyValueSection> s) {
  beginResetModel();
  sections_ = std::move(s);
  endResetModel();
}

QModelIndex KeyValueModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kSectionId);
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex KeyValueModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kSectionId) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kSectionId);
}

int KeyValueModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(sections_.size());
  if (parent.column() != 0 || parent.internalId() != kSectionId) return 0;
  return static_cast<int>(sections_[static_cast<size_t>(parent.row())].rows.size());
}

int KeyValueModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant KeyValueModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  if (index.internalId() == kSectionId) {
    const auto& s = sections_[static_cast<size_t>(index.row())];
    if (role == Qt::DisplayRole && index.column() == Label) return s.title;
    if (role == Qt::FontRole) {
      QFont f;
      f.setBold(true);
      return f;
    }
    return {};
  }
  const auto& r = sections_[index.internalId() - 1].rows[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return index.column() == Label ? r.label : r.value;
    case Qt::ToolTipRole: return r.tooltip.isEmpty() ? r.label + QStringLiteral(": ") + r.value : r.tooltip;
    case Qt::ForegroundRole:
      if (r.warn && index.column() == Value) return QBrush(fmt::kBad);
      break;
    case FitsRole: return !r.warn;
  }
  return {};
}

QVariant KeyValueModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == Label ? QStringLiteral("Metric") : QStringLiteral("Value");
}

std::vector<KeyValueSection> summary_sections(const Prediction& p) {
  std::vector<KeyValueSection> out;
  if (!p.feasible) {
    out.push_back({QStringLiteral("Does not fit"), {{QStringLiteral("reason"), fmt::qs(p.infeasible_reason), {}, true}}});
    return out;
  }
  const double step = p.step_time_s > 0 ? p.step_time_s : 1;
  auto share = [&](double s) { return fmt::duration(s) + QStringLiteral("  (") + fmt::percent(s / step) + QStringLiteral(")"); };
  out.push_back({QStringLiteral("Throughput"),
                 {{QStringLiteral("step time"), fmt::duration(p.step_time_s), {}, false},
                  {QStringLiteral("tokens/s"), fmt::rate(p.tokens_per_s, ""), {}, false},
                  {QStringLiteral("samples/s"), QString::number(p.samples_per_s, 'g', 4), {}, false},
                  {QStringLiteral("model TFLOPS per GPU"), QString::number(p.model_tflops_per_gpu, 'f', 1),
                   QStringLiteral("model FLOPs (no recompute) per GPU per second"), false},
                  {QStringLiteral("hardware TFLOPS per GPU"), QString::number(p.hardware_tflops_per_gpu, 'f', 1),
                   QStringLiteral("GEMM FLOPs executed, recompute included"), false},
                  {QStringLiteral("MFU"), fmt::percent(p.mfu), {}, false},
                  {QStringLiteral("GPU busy"), fmt::percent(p.gpu_efficiency), {}, p.gpu_efficiency < 0.5}}});
  out.push_back({QStringLiteral("Phases"),
                 {{QStringLiteral("forward"), share(p.forward_s), {}, false},
                  {QStringLiteral("backward"), share(p.backward_s), {}, false},
                  {QStringLiteral("optimizer"), share(p.optimizer_s), {}, false}}});
  {
    // "NVMe write: 59% of the step, exposed (…)" → what, then why (the full sentence is the tooltip).
    const QString b = fmt::qs(p.bottleneck);
    const int colon = static_cast<int>(b.indexOf(QLatin1Char(':')));
    const bool exposed = p.bottleneck_key != "gpu_compute";
    KeyValueSection s{QStringLiteral("Bottleneck"), {{QStringLiteral("resource"), colon > 0 ? b.left(colon) : b, b, exposed}}};
    if (colon > 0) s.rows.push_back({QStringLiteral("share"), b.mid(colon + 1).trimmed(), b, exposed});
    out.push_back(std::move(s));
  }
  if (!p.exposed.empty()) {
    KeyValueSection s{QStringLiteral("Exposed (GPU idle) of busy time"), {}};
    for (const auto& x : p.exposed)
      s.rows.push_back({fmt::qs(x.label), fmt::duration(x.exposed_s) + QStringLiteral(" of ") + fmt::duration(x.active_s), {},
                        x.key == p.bottleneck_key});
    out.push_back(std::move(s));
  }
  if (!p.cpu_threads.empty() && !p.passes.empty())
    out.push_back({QStringLiteral("CPU threads (as launched)"),
                   {{QStringLiteral("threads"), fmt::qs(p.cpu_threads), fmt::qs(p.cpu_threads), false}}});
  auto parts = [&](const QString& title, const std::vector<StepPart>& v) {
    if (v.empty()) return;
    KeyValueSection s{title, {}};
    for (const auto& x : v) {
      QString value = fmt::duration(x.busy_s) + QStringLiteral(", ") + fmt::duration(x.exposed_s) +
                      QStringLiteral(" exposed · ") + fmt::gbps(x.rate_GBps);
      if (x.gparams_per_s > 0) value += QStringLiteral(" · ") + QString::number(x.gparams_per_s, 'g', 3) + QStringLiteral(" Gparam/s");
      s.rows.push_back({fmt::qs(x.name.empty() ? x.label : x.name), value, fmt::qs(x.label), x.exposed_s > 0.05 * step});
    }
    out.push_back(std::move(s));
  };
  parts(QStringLiteral("Optimizer passes (rank 0)"), p.passes);
  parts(QStringLiteral("Copies (rank 0)"), p.copies);
  if (!p.advice.empty()) {
    KeyValueSection s{QStringLiteral("To hide what is exposed (simulated)"), {}};
    for (const auto& a : p.advice)
      s.rows.push_back({fmt::qs(a.change),
                        fmt::duration(a.step_time_s) + QStringLiteral(" per step (−") + fmt::percent(a.saved_s / step) +
                            QStringLiteral(")"),
                        QStringLiteral("hides ") + fmt::qs(a.hides), false});
    out.push_back(std::move(s));
  }
  if (!p.required.empty()) {
    KeyValueSection s{QStringLiteral("Needed per GPU for ") + fmt::percent(p.target_efficiency) + QStringLiteral(" GPU busy"), {}};
    for (const auto& q : p.required)
      s.rows.push_back({fmt::qs(q.label), fmt::gbps(q.need_GBps) + QStringLiteral("  (has ") + fmt::gbps(q.has_GBps) + QStringLiteral(")"),
                        q.short_ ? QStringLiteral("short: the tier cannot feed the GPU at this efficiency") : QString(), q.short_});
    out.push_back(std::move(s));
  }
  KeyValueSection mem{QStringLiteral("Memory peak (simulated)"), {}};
  const char* names[3] = {"GPU per rank", "CPU per node", "NVMe per node"};
  for (size_t t = 0; t < 3; ++t) {
    if (p.peak_bytes[t] == 0 && t == 2) continue;
    mem.rows.push_back({QString::fromUtf8(names[t]),
                        fmt::bytes(p.peak_bytes[t]) + QStringLiteral(" of ") + fmt::bytes(p.capacity_bytes[t]), {},
                        p.peak_bytes[t] > p.capacity_bytes[t]});
  }
  out.push_back(std::move(mem));
  if (p.ops > 0)
    out.push_back({QStringLiteral("Simulation"),
                   {{QStringLiteral("ops per rank"), QString::number(p.ops), {}, false},
                    {QStringLiteral("GPUs simulated"), QString::number(p.simulated_gpus), QStringLiteral("one node; nodes are symmetric"), false},
                    {QStringLiteral("simulator wall time"), fmt::duration(p.wall_s), {}, false}}});
  return out;
}

std::vector<KeyValueSection> model_sections(const core::ModelSpec& m, const core::Strategy& s) {
  const auto f = core::flops_per_token(m, s.run.seq_len);
  const int64_t tokens = s.train_batch_size * s.run.seq_len;
  // With an adapter, PEFT's "trainable params" beside the total (which counts the adapter, as PEFT does).
  const int64_t all = core::parameter_count(m), trainable = core::trainable_parameter_count(m);
  QString params = QString::number(all / 1e9, 'f', 2) + QStringLiteral(" B");
  if (trainable != all)
    params += QStringLiteral(", %1 M trainable (%2%)").arg(trainable / 1e6, 0, 'f', 1).arg(100.0 * trainable / all, 0, 'f', 2);
  return {{QStringLiteral("Model"),
           {{QStringLiteral("parameters"), params, {}, false},
            {QStringLiteral("layers × hidden"),
             QStringLiteral("%1 × %2, %3 heads").arg(m.layers).arg(m.hidden).arg(m.heads),
             QStringLiteral("%1 layers, hidden %2, %3 heads (%4 KV), FFN %5, vocab %6")
                 .arg(m.layers).arg(m.hidden).arg(m.heads).arg(m.kv_heads).arg(m.ffn_hidden).arg(m.vocab), false},
            {QStringLiteral("training FLOPs per token"), QString::number(f.training(s.activation_checkpointing.enabled) / 1e9, 'f', 1) + QStringLiteral(" GFLOP"), {}, false}}},
          {QStringLiteral("Run"),
           {{QStringLiteral("world"), QStringLiteral("%1 node × %2 GPU").arg(s.run.nodes).arg(s.run.gpus_per_node), {}, false},
            {QStringLiteral("global batch"),
             QStringLiteral("%1 = %2 micro × %3 GA × %4")
                 .arg(s.train_batch_size).arg(s.micro_batch_per_gpu).arg(s.gradient_accumulation_steps).arg(s.world()), {}, false},
            {QStringLiteral("tokens per step"), QString::number(tokens), {}, false}}}};
}

}  // namespace zs::gui
