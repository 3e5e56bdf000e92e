// The only translation unit that includes Qt Charts.
#include "gui/charts/charts.h"

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <QCursor>
#include <QFontMetrics>
#include <QGraphicsLayout>
#include <QLabel>
#include <QLayout>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace zs::gui::charts {
namespace {

const QColor kGrid(0xe4, 0xe4, 0xe4);
const QColor kAxisText(0x50, 0x50, 0x50);
const QColor kCapacity(0xc6, 0x28, 0x28);

QChartView* make_view(QWidget* parent) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart->layout()->setContentsMargins(0, 0, 0, 0);
  QFont tf = chart->titleFont();
  tf.setPointSizeF(9.5);
  tf.setBold(true);
  chart->setTitleFont(tf);
  QFont lf = chart->legend()->font();
  lf.setPointSizeF(8);
  chart->legend()->setFont(lf);
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setFrameShape(QFrame::NoFrame);
  return view;
}

void style_axis(QAbstractAxis* a) {
  QFont f = a->labelsFont();
  f.setPointSizeF(8);
  a->setLabelsFont(f);
  a->setLabelsColor(kAxisText);
  QFont t = a->titleFont();
  t.setPointSizeF(8);
  t.setBold(false);
  a->setTitleFont(t);
  a->setTitleBrush(kAxisText);
  a->setGridLineColor(kGrid);
  a->setLinePenColor(QColor(0xbd, 0xbd, 0xbd));
}

// A round upper bound (1, 2, 2.5, 5 × 10^k) so axis ticks land on readable values.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v * 0.999) return m * p;
  return 10 * p;
}

QString number_format(double max) { return max >= 100 ? QStringLiteral("%.0f") : max >= 10 ? QStringLiteral("%.0f") : QStringLiteral("%.1f"); }

void clear_chart(QChart* c) {
  c->removeAllSeries();
  for (QAbstractAxis* a : c->axes()) {
    c->removeAxis(a);
    delete a;
  }
}

}  // namespace

// ---- TierBarsChart ----

namespace {

// Lays its items out left to right and wraps to the next line when one does not fit (Qt's flow layout example).
// An item wider than the whole line gets the line's width and the height it needs there (a word-wrapped label).
class FlowLayout : public QLayout {
 public:
  FlowLayout(QWidget* parent, int hspace, int vspace) : QLayout(parent), h_(hspace), v_(vspace) {
    setContentsMargins(0, 0, 0, 0);
  }
  ~FlowLayout() override {
    while (QLayoutItem* i = takeAt(0)) delete i;
  }
  void addItem(QLayoutItem* i) override { items_.append(i); }
  int count() const override { return static_cast<int>(items_.size()); }
  QLayoutItem* itemAt(int k) const override { return items_.value(k); }
  QLayoutItem* takeAt(int k) override { return k >= 0 && k < items_.size() ? items_.takeAt(k) : nullptr; }
  Qt::Orientations expandingDirections() const override { return {}; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int w) const override { return arrange(QRect(0, 0, w, 0), false); }
  void setGeometry(const QRect& r) override {
    QLayout::setGeometry(r);
    arrange(r, true);
  }
  QSize sizeHint() const override { return minimumSize(); }
  QSize minimumSize() const override {
    QSize s;
    for (const QLayoutItem* i : items_) s = s.expandedTo(i->minimumSize());
    const QMargins m = contentsMargins();
    return s + QSize(m.left() + m.right(), m.top() + m.bottom());
  }

 private:
  // Places the items in `rect` (when apply) and returns the height they take.
  int arrange(const QRect& rect, bool apply) const {
    const QRect r = rect.marginsRemoved(contentsMargins());
    const int width = std::max(1, r.width());
    int x = r.x(), y = r.y(), line = 0;
    for (QLayoutItem* it : items_) {
      if (it->isEmpty()) continue;
      const QSize hint = it->sizeHint();
      const int w = std::min(hint.width(), width);
      const int h = it->hasHeightForWidth() ? std::max(hint.height(), it->heightForWidth(w)) : hint.height();
      if (x > r.x() && x + w > r.x() + width) {
        x = r.x();
        y += line + v_;
        line = 0;
      }
      if (apply) it->setGeometry(QRect(x, y, w, h));
      x += w + h_;
      line = std::max(line, h);
    }
    return y + line - r.y() + contentsMargins().top() + contentsMargins().bottom();
  }
  QList<QLayoutItem*> items_;
  int h_, v_;
};

// One legend entry: a colour swatch (or the dashed capacity line) and the item's full name with its size. Its size
// hint is the whole text on one line; given less, it wraps (never elides), and its height for that width says so.
class LegendEntry : public QLabel {
 public:
  LegendEntry(const QString& text, const QColor& color, bool capacity, QWidget* parent)
      : QLabel(text, parent), color_(color), capacity_(capacity) {
    setObjectName(QStringLiteral("legend_item"));
    setTextFormat(Qt::PlainText);
    setWordWrap(true);
    setAlignment(Qt::AlignLeft | Qt::AlignTop);
    setContentsMargins(kSwatch + 5, 0, 0, 0);
  }
  QSize sizeHint() const override {
    const QMargins m = contentsMargins();
    const QFontMetrics fm = fontMetrics();
    return {fm.horizontalAdvance(text()) + 2 + m.left() + m.right(), fm.height() + m.top() + m.bottom()};
  }

 protected:
  void paintEvent(QPaintEvent* e) override {
    QLabel::paintEvent(e);
    QPainter p(this);
    const int top = contentsMargins().top() + (fontMetrics().height() - kSwatch) / 2;
    if (capacity_) {
      QPen pen(color_);
      pen.setWidthF(2);
      pen.setStyle(Qt::DashLine);
      p.setPen(pen);
      p.drawLine(QPointF(kSwatch / 2.0, top - 1), QPointF(kSwatch / 2.0, top + kSwatch + 1));
    } else {
      p.fillRect(QRect(0, top, kSwatch, kSwatch), color_);
      p.setPen(color_.darker(130));
      p.drawRect(QRect(0, top, kSwatch - 1, kSwatch - 1));
    }
  }

 private:
  static constexpr int kSwatch = 10;
  QColor color_;
  bool capacity_;
};

// A tier's legend: every segment's entry, in the bar's order, in a flow that wraps with the width. Its minimum
// height follows its width so the layouts above never squeeze (clip) an entry. It reports no height-for-width: a
// box layout in that mode takes each item's preferred height as its minimum and, short of room, squeezes them all.
class TierLegend : public QWidget {
 public:
  bool hasHeightForWidth() const override { return false; }
  // As tall as its entries need at its width, no taller (the bar above takes the rest).
  QSize sizeHint() const override { return {QWidget::sizeHint().width(), minimumHeight()}; }
  explicit TierLegend(QWidget* parent) : QWidget(parent), flow_(new FlowLayout(this, 14, 2)) {
    setObjectName(QStringLiteral("tier_legend"));
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    flow_->setContentsMargins(8, 0, 4, 4);
    QFont f = font();
    f.setPointSizeF(8);
    setFont(f);
  }
  void set_entries(const TierBar& b, const QString& unit) {
    for (LegendEntry* e : entries_) delete e;
    entries_.clear();
    double total = 0;
    for (const auto& s : b.segments) total += s.value;
    for (const auto& s : b.segments) {
      auto* e = new LegendEntry(QStringLiteral("%1  %2").arg(s.label, amount(s.value, unit)), s.color, false, this);
      e->setToolTip(QStringLiteral("%1: %2 %3 (%4% of the bar)")
                        .arg(s.label)
                        .arg(s.value, 0, 'f', 2)
                        .arg(unit)
                        .arg(total > 0 ? 100 * s.value / total : 0, 0, 'f', 1));
      add(e);
    }
    if (b.capacity > 0) add(new LegendEntry(QStringLiteral("capacity  %1").arg(amount(b.capacity, unit)),
                                            kCapacity, true, this));
    fit_height();
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QWidget::resizeEvent(e);
    fit_height();
  }

 private:
  static QString amount(double v, const QString& unit) {
    if (unit == QStringLiteral("GiB") && v < 1) return QStringLiteral("%1 MiB").arg(v * 1024, 0, 'f', 1);
    if (unit == QStringLiteral("GiB") && v >= 1024) return QStringLiteral("%1 TiB").arg(v / 1024, 0, 'f', 2);
    return QStringLiteral("%1 %2").arg(v, 0, 'f', v >= 100 ? 0 : 1).arg(unit);
  }
  void add(LegendEntry* e) {
    entries_.push_back(e);
    flow_->addWidget(e);
    e->show();
  }
  void fit_height() {
    const int h = flow_->heightForWidth(std::max(width(), 1));
    if (minimumHeight() != h) setMinimumHeight(h);
  }
  FlowLayout* flow_;
  std::vector<LegendEntry*> entries_;
};

}  // namespace

struct TierBarsChart::Impl {
  QVBoxLayout* layout = nullptr;
  std::vector<QWidget*> rows;
  std::vector<QChartView*> views;
  std::vector<TierLegend*> legends;
};

TierBarsChart::TierBarsChart(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  d_->layout = new QVBoxLayout(this);
  d_->layout->setContentsMargins(0, 0, 0, 0);
  d_->layout->setSpacing(2);
}
TierBarsChart::~TierBarsChart() = default;

void TierBarsChart::set_bars(const std::vector<TierBar>& bars, const QString& unit) {
  while (d_->views.size() < bars.size()) {
    auto* row = new QWidget(this);
    auto* rl = new QVBoxLayout(row);
    rl->setContentsMargins(0, 0, 0, 0);
    rl->setSpacing(0);
    auto* v = make_view(row);
    v->setMinimumHeight(96);
    auto* legend = new TierLegend(row);
    rl->addWidget(v, 1);
    rl->addWidget(legend);
    d_->layout->addWidget(row);
    d_->rows.push_back(row);
    d_->views.push_back(v);
    d_->legends.push_back(legend);
  }
  for (size_t i = 0; i < d_->rows.size(); ++i) d_->rows[i]->setVisible(i < bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    const TierBar& b = bars[i];
    QChart* c = d_->views[i]->chart();
    clear_chart(c);
    c->setTitle(b.title);
    c->setTitleBrush(b.fits ? QColor(0x21, 0x21, 0x21) : kCapacity);
    auto* series = new QHorizontalStackedBarSeries;
    series->setBarWidth(0.62);
    double total = 0;
    for (const auto& s : b.segments) total += s.value;
    for (const auto& s : b.segments) {
      auto* set = new QBarSet(s.label);
      *set << s.value;
      set->setColor(s.color);
      set->setBorderColor(QColor(0xff, 0xff, 0xff));
      const QString tip = QStringLiteral("%1: %2 %3").arg(s.label).arg(s.value, 0, 'f', 2).arg(unit);
      QObject::connect(set, &QBarSet::hovered, d_->views[i], [tip](bool on, int) {
        if (on) QToolTip::showText(QCursor::pos(), tip);
        else QToolTip::hideText();
      });
      series->append(set);
    }
    c->addSeries(series);
    const double top = nice_ceiling(std::max(total, b.capacity) * 1.04);
    auto* x = new QValueAxis;
    x->setRange(0, top);
    x->setTickCount(6);
    x->setLabelFormat(number_format(top));
    x->setTitleVisible(false);  // the title and the legend say the unit; the height goes to the tick labels
    style_axis(x);
    auto* y = new QBarCategoryAxis;
    y->append(QStringLiteral(" "));
    y->setGridLineVisible(false);
    style_axis(y);
    c->addAxis(x, Qt::AlignBottom);
    c->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    if (b.capacity > 0) {
      auto* cap = new QLineSeries;
      cap->setName(QStringLiteral("capacity"));
      cap->append(b.capacity, 0);
      cap->append(b.capacity, 1);
      QPen pen(kCapacity);
      pen.setWidthF(2);
      pen.setStyle(Qt::DashLine);
      cap->setPen(pen);
      c->addSeries(cap);
      auto* y2 = new QValueAxis;
      y2->setRange(0, 1);
      y2->setVisible(false);
      c->addAxis(y2, Qt::AlignRight);
      cap->attachAxis(x);
      cap->attachAxis(y2);
    }
    // The legend is ours, under the bar: Qt Charts' own elides names and has no room for every item.
    c->legend()->setVisible(false);
    d_->legends[i]->set_entries(b, unit);
  }
}

// ---- BarChart ----

struct BarChart::Impl {
  QChartView* view = nullptr;
};

BarChart::BarChart(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  d_->view = make_view(this);
  l->addWidget(d_->view);
}
BarChart::~BarChart() = default;

void BarChart::set_data(const BarChartData& data) {
  QChart* c = d_->view->chart();
  clear_chart(c);
  c->setTitle(data.title);
  QAbstractBarSeries* series = nullptr;
  if (data.stacked)
    series = data.horizontal ? static_cast<QAbstractBarSeries*>(new QHorizontalStackedBarSeries) : new QStackedBarSeries;
  else
    series = data.horizontal ? static_cast<QAbstractBarSeries*>(new QHorizontalBarSeries) : new QBarSeries;
  double top = 0;
  std::vector<double> stack(static_cast<size_t>(data.categories.size()), 0);
  for (const auto& s : data.sets) {
    auto* set = new QBarSet(s.name);
    for (size_t k = 0; k < s.values.size(); ++k) {
      *set << s.values[k];
      if (k < stack.size()) stack[k] += s.values[k];
      top = std::max(top, s.values[k]);
    }
    set->setColor(s.color);
    set->setBorderColor(s.color.darker(115));
    QStringList cats = data.categories;
    const QString name = s.name;
    QObject::connect(set, &QBarSet::hovered, d_->view, [set, cats, name](bool on, int k) {
      if (on && k >= 0 && k < cats.size())
        QToolTip::showText(QCursor::pos(), QStringLiteral("%1 · %2: %3").arg(cats[k], name).arg(set->at(k), 0, 'g', 4));
      else
        QToolTip::hideText();
    });
    series->append(set);
  }
  if (data.stacked)
    for (double v : stack) top = std::max(top, v);
  series->setBarWidth(data.sets.size() > 1 && !data.stacked ? 0.75 : 0.55);
  c->addSeries(series);
  auto* cat = new QBarCategoryAxis;
  cat->append(data.categories);
  cat->setGridLineVisible(false);
  style_axis(cat);
  auto* val = new QValueAxis;
  val->setRange(0, top > 0 ? top * 1.05 : 1);
  val->setTickCount(5);
  val->applyNiceNumbers();
  const double t = val->max();
  val->setLabelFormat(t >= 10 ? QStringLiteral("%.0f") : t >= 1 ? QStringLiteral("%.1f") : QStringLiteral("%.2f"));
  val->setTitleText(data.value_label);
  style_axis(val);
  c->addAxis(cat, data.horizontal ? Qt::AlignLeft : Qt::AlignBottom);
  c->addAxis(val, data.horizontal ? Qt::AlignBottom : Qt::AlignLeft);
  series->attachAxis(cat);
  series->attachAxis(val);
  c->legend()->setVisible(data.legend);
  c->legend()->setAlignment(Qt::AlignBottom);
}

// ---- LineChart ----

struct LineChart::Impl {
  QChartView* view = nullptr;
};

LineChart::LineChart(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  d_->view = make_view(this);
  l->addWidget(d_->view);
}
LineChart::~LineChart() = default;

namespace {
// At most ~max_points: per bucket of x the largest y (memory peaks must stay visible), as a step function.
QList<QPointF> reduce(const std::vector<QPointF>& pts, bool step, size_t max_points) {
  QList<QPointF> out;
  if (pts.empty()) return out;
  const double x0 = pts.front().x(), x1 = pts.back().x();
  const size_t buckets = std::max<size_t>(1, max_points / 2);
  std::vector<QPointF> src;
  if (pts.size() > max_points && x1 > x0) {
    const double w = (x1 - x0) / static_cast<double>(buckets);
    size_t k = 0;
    for (size_t b = 0; b < buckets && k < pts.size(); ++b) {
      const double end = x0 + w * static_cast<double>(b + 1);
      double ymax = -1e300;
      double xs = pts[k].x();
      bool any = false;
      while (k < pts.size() && (pts[k].x() <= end || b + 1 == buckets)) {
        ymax = std::max(ymax, pts[k].y());
        any = true;
        ++k;
      }
      if (any) src.emplace_back(xs, ymax);
    }
  } else {
    src = pts;
  }
  for (size_t i = 0; i < src.size(); ++i) {
    if (step && i > 0) out.append(QPointF(src[i].x(), src[i - 1].y()));
    out.append(src[i]);
  }
  return out;
}
}  // namespace

void LineChart::set_data(const LineChartData& data) {
  QChart* c = d_->view->chart();
  clear_chart(c);
  c->setTitle(data.title);
  double xmin = 0, xmax = 0, ymax = 0;
  bool first = true;
  for (const auto& s : data.series)
    for (const auto& p : s.points) {
      xmin = first ? p.x() : std::min(xmin, p.x());
      xmax = first ? p.x() : std::max(xmax, p.x());
      ymax = std::max(ymax, p.y());
      first = false;
    }
  if (data.reference) ymax = std::max(ymax, *data.reference);
  if (xmax <= xmin) xmax = xmin + 1;
  auto* x = new QValueAxis;
  x->setRange(xmin, xmax);
  x->setTickCount(6);
  x->applyNiceNumbers();
  x->setLabelFormat(xmax - xmin >= 10 ? QStringLiteral("%.0f") : xmax - xmin >= 1 ? QStringLiteral("%.1f") : QStringLiteral("%.2f"));
  x->setTitleText(data.x_label);
  style_axis(x);
  auto* y = new QValueAxis;
  const double top = data.y_max ? *data.y_max : ymax * 1.08;
  y->setRange(0, top > 0 ? top : 1);
  y->setTickCount(5);
  y->applyNiceNumbers();
  y->setLabelFormat(number_format(y->max()));
  y->setTitleText(data.y_label);
  style_axis(y);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  for (const auto& s : data.series) {
    auto* line = new QLineSeries;
    line->setName(s.name);
    line->append(reduce(s.points, s.step, 1500));
    QPen pen(s.color);
    pen.setWidthF(s.dashed ? 1.8 : 1.6);
    if (s.dashed) pen.setStyle(Qt::DashLine);
    if (s.area) {
      auto* area = new QAreaSeries(line);
      area->setName(s.name);
      QColor fill = s.color;
      fill.setAlpha(70);
      area->setBrush(fill);
      area->setPen(pen);
      c->addSeries(area);
      area->attachAxis(x);
      area->attachAxis(y);
    } else {
      line->setPen(pen);
      c->addSeries(line);
      line->attachAxis(x);
      line->attachAxis(y);
    }
  }
  if (data.reference) {
    auto* ref = new QLineSeries;
    ref->setName(data.reference_label.isEmpty() ? QStringLiteral("capacity") : data.reference_label);
    ref->append(xmin, *data.reference);
    ref->append(xmax, *data.reference);
    QPen pen(kCapacity);
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.5);
    ref->setPen(pen);
    c->addSeries(ref);
    ref->attachAxis(x);
    ref->attachAxis(y);
  }
  c->legend()->setVisible(data.legend);
  c->legend()->setAlignment(Qt::AlignBottom);
}

}  // namespace zs::gui::charts
