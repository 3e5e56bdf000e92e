#include "gui/widgets/timeline_view.h"

#include <QApplication>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QToolTip>
#include <QTreeView>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/models/format.h"

namespace zs::gui {
namespace {

QString short_label(const core::TraceEvent& e) {
  using K = core::OpKind;
  const char* k = "";
  switch (e.kind) {
    case K::forward: k = "F"; break;
    case K::backward: k = "B"; break;
    case K::recompute: k = "R"; break;
    case K::h2d: k = "H2D"; break;
    case K::d2h: k = "D2H"; break;
    case K::nvme_read: k = "rd"; break;
    case K::nvme_write: k = "wr"; break;
    case K::allgather: k = "AG"; break;
    case K::reduce_scatter: k = "RS"; break;
    case K::allreduce: k = "AR"; break;
    case K::adam_cpu:
    case K::adam_gpu: k = "Adam"; break;
    case K::cast_cpu: k = "cast"; break;
    default: break;
  }
  QString s = QString::fromUtf8(k);
  if (e.layer >= 0) s += QStringLiteral(" %1").arg(e.layer);
  return s;
}

// Paints column 1: the lane's events in the axis window, one rectangle per op, merged below a pixel.
class TimelineDelegate : public QStyledItemDelegate {
 public:
  TimelineDelegate(const TimeAxis* const* axis, QObject* parent) : QStyledItemDelegate(parent), axis_(axis) {}

  void paint(QPainter* p, const QStyleOptionViewItem& opt, const QModelIndex& index) const override {
    const auto* m = dynamic_cast<const TimelineModel*>(index.model());
    if (index.column() != TimelineModel::Events || !m || !m->trace()) {
      QStyledItemDelegate::paint(p, opt, index);
      return;
    }
    const TimeAxis& a = **axis_;
    const QRect r = opt.rect;
    p->save();
    p->setClipRect(r);
    p->fillRect(r, index.row() % 2 ? QColor(0xfa, 0xfa, 0xfa) : QColor(0xff, 0xff, 0xff));
    p->setPen(QColor(0xee, 0xee, 0xee));
    for (const Tick& t : a.ticks(90)) p->drawLine(QPointF(r.left() + t.x, r.top()), QPointF(r.left() + t.x, r.bottom()));
    const auto& ev = m->trace()->events;
    const Lane& lane = m->lane(index.row());
    const auto [first, last] = m->visible(index.row(), a.view_start(), a.view_end());
    const double top = r.top() + 3, h = r.height() - 6;
    double covered = -1e9;  // rightmost pixel already painted
    QFont f = opt.font;
    f.setPointSizeF(7.5);
    p->setFont(f);
    const QFontMetrics fm(f);
    for (size_t k = first; k < last; ++k) {
      const auto& e = ev[lane.events[k]];
      double x0 = r.left() + a.x_of(e.start_s), x1 = r.left() + a.x_of(e.end_s);
      x0 = std::max(x0, static_cast<double>(r.left()) - 1);
      x1 = std::min(x1, static_cast<double>(r.right()) + 1);
      if (x1 - x0 < 1) x1 = x0 + 1;
      if (x1 <= covered) continue;  // under a pixel already painted: merged
      x0 = std::max(x0, covered);
      const QColor c = fmt::kind_color(e.kind);
      const QRectF box(x0, top, x1 - x0, h);
      p->fillRect(box, c);
      if (x1 - x0 >= 4) {
        p->setPen(c.darker(130));
        p->drawLine(QPointF(x0, top), QPointF(x0, top + h));
      }
      const QString label = short_label(e);
      if (x1 - x0 > fm.horizontalAdvance(label) + 6) {
        p->setPen(c.lightness() > 150 ? QColor(0x20, 0x20, 0x20) : QColor(0xff, 0xff, 0xff));
        p->drawText(box.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
      }
      covered = x1;
    }
    p->restore();
  }

  QSize sizeHint(const QStyleOptionViewItem& opt, const QModelIndex& index) const override {
    QSize s = QStyledItemDelegate::sizeHint(opt, index);
    s.setHeight(TimelineView::kLaneHeight);
    return s;
  }

  bool helpEvent(QHelpEvent* e, QAbstractItemView* view, const QStyleOptionViewItem& opt, const QModelIndex& index) override {
    const auto* m = dynamic_cast<const TimelineModel*>(index.model());
    if (e->type() != QEvent::ToolTip || index.column() != TimelineModel::Events || !m)
      return QStyledItemDelegate::helpEvent(e, view, opt, index);
    const TimeAxis& a = **axis_;
    const double t = a.t_of(e->pos().x() - opt.rect.left());
    const int ev = m->event_at(index.row(), t, 4.0 / a.scale());
    if (ev < 0) {
      QToolTip::hideText();
      return true;
    }
    QToolTip::showText(e->globalPos(), m->event_text(ev), view);
    return true;
  }

 private:
  const TimeAxis* const* axis_;
};

// The header: column 1 shows the time ruler of the axis.
class RulerHeader : public QHeaderView {
 public:
  RulerHeader(const TimeAxis* const* axis, QWidget* parent) : QHeaderView(Qt::Horizontal, parent), axis_(axis) {
    setMinimumHeight(26);
  }

 protected:
  void paintSection(QPainter* p, const QRect& rect, int logical) const override {
    if (logical != TimelineModel::Events) {
      QHeaderView::paintSection(p, rect, logical);
      return;
    }
    p->save();
    p->fillRect(rect, QColor(0xf5, 0xf5, 0xf5));
    p->setPen(QColor(0xc8, 0xc8, 0xc8));
    p->drawLine(rect.bottomLeft(), rect.bottomRight());
    QFont f = font();
    f.setPointSizeF(8);
    p->setFont(f);
    for (const Tick& t : (*axis_)->ticks(90)) {
      const double x = rect.left() + t.x;
      p->setPen(QColor(0x90, 0x90, 0x90));
      p->drawLine(QPointF(x, rect.bottom() - 6), QPointF(x, rect.bottom()));
      p->setPen(QColor(0x40, 0x40, 0x40));
      p->drawText(QRectF(x + 3, rect.top(), 120, rect.height() - 4), Qt::AlignLeft | Qt::AlignVCenter, fmt::qs(t.label));
    }
    p->restore();
  }

 private:
  const TimeAxis* const* axis_;
};

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), axis_(std::make_shared<TimeAxis>()) {
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  l->setSpacing(2);
  title_ = new QLabel(this);
  title_->setVisible(false);
  QFont tf = title_->font();
  tf.setBold(true);
  title_->setFont(tf);
  l->addWidget(title_);
  tree_ = new QTreeView(this);
  // The delegate and ruler read the axis through this pointer slot, so share_axis() can swap the axis.
  axis_slot_ = std::make_unique<const TimeAxis*>(axis_.get());
  tree_->setHeader(new RulerHeader(axis_slot_.get(), tree_));
  tree_->setItemDelegate(new TimelineDelegate(axis_slot_.get(), tree_));
  tree_->setRootIsDecorated(false);
  tree_->setUniformRowHeights(true);
  tree_->setSelectionMode(QAbstractItemView::NoSelection);
  tree_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  tree_->setMouseTracking(true);
  tree_->setFocusPolicy(Qt::StrongFocus);
  tree_->header()->setStretchLastSection(true);
  tree_->header()->setSectionsMovable(false);
  tree_->viewport()->installEventFilter(this);
  tree_->installEventFilter(this);
  connect(tree_->header(), &QHeaderView::sectionResized, this, [this] { sync_width(); });
  l->addWidget(tree_, 1);
}

TimelineView::~TimelineView() = default;

void TimelineView::set_title(const QString& title) {
  title_->setText(title);
  title_->setVisible(!title.isEmpty());
  fit_height();
}

void TimelineView::set_model(TimelineModel* m) {
  model_ = m;
  tree_->setModel(m);
  tree_->header()->resizeSection(0, 150);
  connect(m, &QAbstractItemModel::modelReset, this, [this] {
    tree_->header()->resizeSection(0, 150);
    fit_height();
    sync_width();
  });
  fit_height();
  sync_width();
}

void TimelineView::share_axis(std::shared_ptr<TimeAxis> axis, std::function<void()> changed) {
  axis_ = std::move(axis);
  *axis_slot_ = axis_.get();
  changed_ = std::move(changed);
  sync_width();
}

void TimelineView::fit_height() {
  // Room for every lane up to eight (more scroll), so a splitter gives the timeline what it needs.
  const int all = model_ ? model_->lanes() : 0;
  const int lanes = std::clamp(all, 3, 8);
  const int chrome = std::max(26, tree_->header()->sizeHint().height()) + 2 * tree_->frameWidth() + 6;
  tree_->setMinimumHeight(chrome + lanes * kLaneHeight);
  // No empty band below the last lane: with few lanes the space goes to the charts next to the timeline.
  tree_->setMaximumHeight(all <= 8 ? chrome + lanes * kLaneHeight : QWIDGETSIZE_MAX);
  const int title = title_->isVisibleTo(this) ? title_->sizeHint().height() + layout()->spacing() : 0;
  setMaximumHeight(all <= 8 ? tree_->maximumHeight() + title : QWIDGETSIZE_MAX);
}

void TimelineView::sync_width() {
  if (tree_->header()->count() > 1) axis_->set_width(std::max(1, tree_->header()->sectionSize(1)));
  refresh();
}

void TimelineView::refresh() {
  tree_->viewport()->update();
  tree_->header()->viewport()->update();
}

void TimelineView::notify() {
  refresh();
  if (changed_) changed_();
}

void TimelineView::reset_range(double end_s) {
  axis_->set_range(0, end_s > 0 ? end_s : 1);
  sync_width();
  notify();
}

void TimelineView::zoom_in() {
  axis_->zoom(1.6, axis_->width() / 2);
  notify();
}
void TimelineView::zoom_out() {
  axis_->zoom(1 / 1.6, axis_->width() / 2);
  notify();
}
void TimelineView::fit() {
  axis_->fit();
  notify();
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == tree_ && event->type() == QEvent::Resize) {
    sync_width();
    return false;
  }
  if (watched != tree_->viewport()) return false;
  const int x0 = tree_->header()->sectionPosition(1) - tree_->header()->offset();
  switch (event->type()) {
    case QEvent::Wheel: {
      auto* w = static_cast<QWheelEvent*>(event);
      const double steps = w->angleDelta().y() / 120.0;
      if (w->modifiers() & Qt::ControlModifier) {
        axis_->zoom(std::pow(1.25, steps), w->position().x() - x0);
        notify();
        return true;
      }
      if (w->modifiers() & Qt::ShiftModifier || w->angleDelta().x() != 0) {
        axis_->pan(-(w->angleDelta().x() != 0 ? w->angleDelta().x() : w->angleDelta().y()) / 2.0);
        notify();
        return true;
      }
      return false;
    }
    case QEvent::MouseButtonPress: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (m->button() == Qt::LeftButton && m->position().x() >= x0) {
        drag_x_ = m->position().x();
        tree_->viewport()->setCursor(Qt::ClosedHandCursor);
        return true;
      }
      return false;
    }
    case QEvent::MouseMove: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (drag_x_ >= 0) {
        axis_->pan(drag_x_ - m->position().x());
        drag_x_ = m->position().x();
        notify();
        return true;
      }
      return false;
    }
    case QEvent::MouseButtonRelease:
      if (drag_x_ >= 0) {
        drag_x_ = -1;
        tree_->viewport()->unsetCursor();
        return true;
      }
      return false;
    case QEvent::MouseButtonDblClick: fit(); return true;
    default: return false;
  }
}

}  // namespace zs::gui
