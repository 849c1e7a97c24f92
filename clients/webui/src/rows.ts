// The history's rows, virtualized: every entry loaded has a row, but only
// the rows near the view are in the page. A row is built the first time it
// comes near the view and kept afterwards; the rows above and below the
// ones shown are stood for by the list's padding, sized from the rows'
// heights (measured once shown, estimated before). So a session with a
// hundred thousand entries costs, in the page, a screenful of rows, and
// scrolling back builds and lays out the rows coming into view, not every
// row of the pages loaded.
//
// The list reports its window as data attributes (read by the benchmarks
// and tests): data-rows (rows loaded), data-first and data-end (the rows
// in the page, as indexes: data-first="0" is the oldest row loaded),
// data-first-seq (the seq of the first row in the page).

/** Row is one row of the history. */
export interface Row {
  /** seq and entryId are the row's entry's (for a tool card, the entry that made it). */
  readonly seq: number;
  readonly entryId: string;
  /** h is the row's height with its margin, in px: measured once shown, estimated until then. */
  h: number;
  measured: boolean;
  /** make builds the row's element, the first time it is shown. */
  make: () => HTMLElement;
  el?: HTMLElement;
}

/** pad is the list's own padding above its first row and below its last (px). */
const pad = 8;
/** gap is each row's bottom margin (px; app.css: #history > li). */
const gap = 4;
/** overscan is how far above and below the view rows are kept in the page (px). */
const overscan = 400;
/** maxShown bounds the rows in the page at once, whatever the estimates say. */
const maxShown = 300;
/**
 * fillPerFrame is how many rows not built yet a render builds outside the
 * view (in the overscan); the rest come in the next frames. The rows in
 * the view are always built. A jump far back (a fling, or the scrollbar
 * dragged) then builds and lays out a screenful of rows in its frame, not a
 * screenful and 800 px more.
 */
const fillPerFrame = 4;

/** VirtualList shows the rows of list near the scroller's view. */
export class VirtualList {
  readonly rows: Row[] = [];
  /** rows[start, end) are in the page. */
  private start = 0;
  private end = 0;
  private measuredSum = 0;
  private measuredCount = 0;
  private frame = 0;
  /** pinned: the view is at the end, and stays there as rows come and the scroller changes size. */
  private pinned = false;
  /**
   * pinnedAt is the scroll position pinned was judged at (the list's own
   * last one, or a scroll event's); undefined after a resize, which moves
   * no view by itself. A scheduled render that finds the view elsewhere
   * judges again: the view was scrolled since (by a script, or a wheel whose
   * scroll event comes a frame later), and is not to be put back at the end.
   */
  private pinnedAt: number | undefined;
  private readonly resize: ResizeObserver;

  constructor(
    private readonly scroller: HTMLElement,
    private readonly list: HTMLElement,
  ) {
    scroller.addEventListener("scroll", () => {
      this.pinned = this.atBottom();
      this.pinnedAt = scroller.scrollTop;
      this.schedule();
    });
    this.resize = new ResizeObserver(() => {
      this.pinnedAt = undefined;
      this.schedule();
    });
    this.resize.observe(scroller);
  }

  close(): void {
    this.resize.disconnect();
    cancelAnimationFrame(this.frame);
  }

  /** row makes a row for an entry, with the height rows have on average so far. */
  row(seq: number, entryId: string, make: () => HTMLElement): Row {
    return { seq, entryId, make, h: this.measuredCount ? this.measuredSum / this.measuredCount : 60, measured: false };
  }

  /** reset shows rows in place of any shown, scrolled to the end. */
  reset(rows: Row[]): void {
    this.rows.splice(0, this.rows.length, ...rows);
    this.start = this.end = 0;
    this.list.replaceChildren();
    this.render(true);
  }

  /**
   * resetAt shows rows in place of any shown, with rows[i] in the middle of
   * the view: the padding stands for every row at its estimated height, the
   * view goes to row i's estimated place, the render builds the rows there,
   * and the view is set again from row i's element.
   */
  resetAt(rows: Row[], i: number): void {
    this.rows.splice(0, this.rows.length, ...rows);
    this.start = this.end = 0;
    this.list.replaceChildren();
    const sc = this.scroller;
    this.list.style.paddingTop = `${pad}px`;
    this.list.style.paddingBottom = `${pad + this.sumTo(this.rows.length)}px`;
    sc.scrollTop = Math.max(0, pad + this.sumTo(i) - sc.clientHeight / 2);
    this.pinned = false;
    this.render(false);
    const el = this.rows[i]?.el;
    if (!el?.isConnected) return;
    const r = el.getBoundingClientRect();
    const view = sc.getBoundingClientRect();
    sc.scrollTop += r.top - view.top - sc.clientTop - Math.max(0, (sc.clientHeight - r.height) / 2);
  }

  /**
   * prepend puts rows above the first (an older page), keeping in view what
   * is in view. The page's rows do not change: the new rows go into the
   * padding above them, and the scroll position moves down by as much, so
   * the view stays where it is without building or measuring anything. The
   * next frame's render brings in those that reach the view (one layout for
   * the frame, not a second one on top of a render of its own).
   */
  prepend(rows: Row[]): void {
    if (rows.length === 0) return;
    this.rows.unshift(...rows);
    this.start += rows.length;
    this.end += rows.length;
    if (this.start === this.end || this.scroller.clientHeight === 0) {
      this.render(false);
      return;
    }
    let added = 0;
    for (const r of rows) added += r.h;
    const st = this.scroller.scrollTop;
    this.list.style.paddingTop = `${(parseFloat(this.list.style.paddingTop) || pad) + added}px`;
    this.scroller.scrollTop = st + added;
    this.pinnedAt = this.scroller.scrollTop;
    this.report();
    this.schedule();
  }

  /** append adds rows at the end; bottom keeps the view at the end. */
  append(rows: Row[], bottom: boolean): void {
    this.rows.push(...rows);
    this.render(bottom);
  }

  /** toBottom scrolls to the end. */
  toBottom(): void {
    this.render(true);
  }

  /** atBottom says whether the view is at (or near) the end. */
  atBottom(): boolean {
    const sc = this.scroller;
    return sc.scrollHeight - sc.scrollTop - sc.clientHeight < 60;
  }

  /** middle is the row in the page at the middle of the view (the nearest one when none is there). */
  middle(): Row | undefined {
    const view = this.scroller.getBoundingClientRect();
    const y = view.top + this.scroller.clientTop + this.scroller.clientHeight / 2;
    let best: Row | undefined;
    let bestDist = Infinity;
    for (let i = this.start; i < this.end; i++) {
      const el = this.rows[i].el;
      if (!el?.isConnected) continue;
      const r = el.getBoundingClientRect();
      const dist = y < r.top ? r.top - y : y > r.bottom ? y - r.bottom : 0;
      if (dist < bestDist) [best, bestDist] = [this.rows[i], dist];
    }
    return best;
  }

  /** find is the newest row of an entry. */
  find(entryId: string): Row | undefined {
    for (let i = this.rows.length - 1; i >= 0; i--) if (this.rows[i].entryId === entryId) return this.rows[i];
    return undefined;
  }

  /** replace makes el the row's element, in the page if the row is shown. */
  replace(row: Row, el: HTMLElement): void {
    row.make = () => el;
    if (row.el?.isConnected) row.el.replaceWith(el);
    if (row.el) row.el = el;
    this.render(this.atBottom());
  }

  /** schedule renders in the next frame (once, however many scroll events come). */
  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      // Scrolled since pinned was judged: judge again. (Without this, a
      // render scheduled before a scroll away from the end, in the same
      // frame, put the view back at the end; its scroll event found it at
      // the end again, and so on every frame: the view never left the end.)
      if (this.pinnedAt !== undefined && Math.abs(this.scroller.scrollTop - this.pinnedAt) >= 1) this.pinned = this.atBottom();
      this.render(this.pinned);
    });
  }

  /** el is the row's element, built the first time. */
  private el(r: Row): HTMLElement {
    if (!r.el) r.el = r.make();
    return r.el;
  }

  /** measure reads a shown row's height. */
  private measure(r: Row): void {
    const h = r.el!.getBoundingClientRect().height + gap;
    if (!r.measured) {
      this.measuredSum += h;
      this.measuredCount++;
      r.measured = true;
    }
    r.h = h;
  }

  /** sumTo is the height of rows[0, i). */
  private sumTo(i: number): number {
    let y = 0;
    for (let k = 0; k < i; k++) y += this.rows[k].h;
    return y;
  }

  /**
   * render puts in the page the rows near the view and keeps the row at
   * the top of the view where it is (or, bottom, the view at the end).
   * Reads and writes are grouped: the rows shown are measured, the window
   * is chosen from the heights, rows go in and out and the padding stands
   * for the rest, the rows that went in are measured (the one layout the
   * frame needs anyway), and the scroll position is set. A second pass
   * follows when the estimates left part of the view without rows.
   */
  render(bottom: boolean): void {
    const sc = this.scroller;
    const list = this.list;
    if (sc.clientHeight === 0) {
      // Not shown: rendered when it gets a size (ResizeObserver), at the end if asked now.
      if (bottom) this.pinned = true;
      this.pinnedAt = undefined;
      return;
    }
    let fill = fillPerFrame;
    let later = false;
    for (let pass = 0; pass < 3; pass++) {
      const vh = sc.clientHeight;
      const scTop = sc.getBoundingClientRect().top + sc.clientTop;
      const st = sc.scrollTop;
      const contentTop = (el: HTMLElement) => el.getBoundingClientRect().top - scTop + sc.scrollTop;
      for (let i = this.start; i < this.end; i++) this.measure(this.rows[i]);
      const n = this.rows.length;
      // origin: where, in the scroller's content, the model's first row begins.
      const origin = this.end > this.start ? contentTop(this.rows[this.start].el!) - this.sumTo(this.start) : contentTop(list) + pad;
      const total = this.sumTo(n);
      const top = bottom ? Math.max(0, total - vh) : st - origin;
      // The window: rows meeting [top - overscan, top + view + overscan];
      // the anchor: the first row reaching below the top of the view.
      let s = n;
      let e = 0;
      let anchor = -1;
      let delta = 0;
      let viewEnd = 0;
      for (let i = 0, y = 0; i < n && y < top + vh + overscan; i++) {
        const h = this.rows[i].h;
        if (s === n && y + h > top - overscan) s = i;
        if (anchor < 0 && y + h > top) {
          anchor = i;
          delta = y - top;
        }
        if (y < top + vh) viewEnd = i + 1;
        y += h;
        e = i + 1;
      }
      if (anchor >= s && anchor < e) {
        // Outside the view, the rows built already, and a few more (fill).
        let a = anchor;
        let b = Math.max(viewEnd, anchor + 1);
        while (a > s && (this.rows[a - 1].el || fill-- > 0)) a--;
        while (b < e && (this.rows[b].el || fill-- > 0)) b++;
        if (a > s || b < e) later = true;
        s = a;
        e = b;
      }
      if (s >= e && n > 0) {
        // The view is past the rows the estimates place: show the last one, measure, and go again.
        s = n - 1;
        e = n;
      }
      if (e - s > maxShown) {
        if (bottom) s = e - maxShown;
        else e = s + maxShown;
      }
      const changed = s !== this.start || e !== this.end;
      if (changed) {
        const active = document.activeElement;
        const drop = (i: number) => {
          const el = this.rows[i].el!;
          if (active && el.contains(active)) sc.focus({ preventScroll: true });
          el.remove();
        };
        const frag = (a: number, b: number) => {
          const f = document.createDocumentFragment();
          for (let i = a; i < b; i++) f.appendChild(this.el(this.rows[i]));
          return f;
        };
        if (this.start === this.end || e <= this.start || s >= this.end) {
          for (let i = this.start; i < this.end; i++) drop(i);
          list.appendChild(frag(s, e));
        } else {
          for (let i = this.start; i < s; i++) drop(i);
          for (let i = e; i < this.end; i++) drop(i);
          if (s < this.start) list.insertBefore(frag(s, this.start), list.firstChild);
          if (e > this.end) list.appendChild(frag(this.end, e));
        }
      }
      const above = this.sumTo(s);
      const below = total - this.sumTo(e);
      list.style.paddingTop = `${pad + above}px`;
      list.style.paddingBottom = `${pad + below}px`;
      const oldStart = this.start;
      const oldEnd = this.end;
      this.start = s;
      this.end = e;
      // Measure the rows that went in (their layout is this frame's).
      for (let i = s; i < e; i++) if (i < oldStart || i >= oldEnd) this.measure(this.rows[i]);
      if (bottom) sc.scrollTop = sc.scrollHeight;
      else if (anchor >= 0 && anchor >= s && anchor < e) {
        const want = contentTop(this.rows[anchor].el!) - delta;
        if (Math.abs(want - sc.scrollTop) >= 1) sc.scrollTop = want;
      }
      this.report();
      if (!changed && pass > 0) break;
      // Is the view covered? If not, another pass with the measured heights.
      const view = sc.scrollTop;
      const first = s < e ? contentTop(this.rows[s].el!) : 0;
      const last = s < e ? contentTop(this.rows[e - 1].el!) + this.rows[e - 1].h : 0;
      if ((s === 0 || first <= view) && (e === n || last >= view + vh)) break;
    }
    this.pinned = bottom || this.atBottom();
    this.pinnedAt = sc.scrollTop;
    // Rows of the overscan left for later: build them in the next frame.
    if (later) this.schedule();
  }

  /** report sets the window's data attributes. */
  private report(): void {
    const d = this.list.dataset;
    d.rows = String(this.rows.length);
    d.first = String(this.start);
    d.end = String(this.end);
    d.firstSeq = this.start < this.end ? String(this.rows[this.start].seq) : "";
  }
}
