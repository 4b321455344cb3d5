import { errorMessage } from '../api';
import {
  profilerApi,
  type AdapterFacts,
  type ExportFormat,
  type KernelKind,
  type KernelTable,
  type KernelVariant,
  type MemoryView,
  type ProfileSummary,
  type ProfilerEvent,
  type StepPhase,
  type StepSample,
} from '../profiler-api';
import { toasts } from './toasts.svelte';

/** Kinds in the order the charts and legends list them. */
export const KERNEL_KINDS: KernelKind[] = ['matmul', 'attention', 'norm', 'embedding', 'elementwise'];

/** Columns of a chart: x (seconds) first, then one column per series, `null` where it has no value. */
export type ChartColumns = [number[], ...(number | null)[][]];

/** Points the charts keep: a few minutes of replies. */
const MAX_POINTS = 600;

export type ThroughputPoint = { atMs: number; phase: StepPhase; tokensPerSecond: number };

/** Decode speed over one window of tokens (the engine hands them over in batches). */
export type TokenWindow = { count: number; spanMs: number };

export type ReplyRecord = { replyId: number; modelId: string; ttftMs: number | null; finished: boolean };

/**
 * Weighted percentile (0–100) of `values`, each counted `weights[i]` times: nearest rank, so
 * the answer is always one of the values. `null` for no values.
 */
export function percentile(values: number[], p: number, weights?: number[]): number | null {
  const entries = values.map((value, i) => ({ value, weight: weights?.[i] ?? 1 })).filter((e) => e.weight > 0);
  if (entries.length === 0) return null;
  entries.sort((a, b) => a.value - b.value);
  const total = entries.reduce((sum, e) => sum + e.weight, 0);
  const rank = Math.max(1, Math.ceil((Math.min(Math.max(p, 0), 100) / 100) * total));
  let seen = 0;
  for (const entry of entries) {
    seen += entry.weight;
    if (seen >= rank) return entry.value;
  }
  return entries[entries.length - 1].value;
}

/** One palette color per kind, from the app's CSS variables so both themes read. */
export const KIND_COLORS: Record<KernelKind, string> = {
  matmul: '--accent',
  attention: '--success',
  norm: '--warning',
  embedding: '--danger',
  elementwise: '--text-faint',
};

/** GB/s with the digits that matter: 1.23, 48.2, 1234. */
export function formatGigabytesPerSecond(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Achieved GB/s as a fraction of the adapter's peak; null where either is unknown. */
export function peakFraction(gigabytesPerSecond: number | null, peak: number | null): number | null {
  if (gigabytesPerSecond === null || peak === null || !(peak > 0)) return null;
  return gigabytesPerSecond / peak;
}

/** A kernel that read weights, as the roofline chart draws it. */
export type RooflineBar = { name: string; kind: KernelKind; gigabytesPerSecond: number; fraction: number | null };

/** The kernels of `table` that read weights, in the table's order (most GPU time first). */
export function rooflineBars(table: KernelTable | null, peak: number | null): RooflineBar[] {
  return (table?.kernels ?? []).flatMap((row) =>
    row.gigabytesPerSecond === null
      ? []
      : [{ name: row.name, kind: row.kind, gigabytesPerSecond: row.gigabytesPerSecond, fraction: peakFraction(row.gigabytesPerSecond, peak) }],
  );
}

/** A kernel variant in three short parts: where it comes from, its threads, its defines. */
export function describeVariant(variant: KernelVariant): { source: string; workgroup: string; defines: string } {
  return {
    source: `${variant.shader}:${variant.entry}`,
    workgroup: variant.workgroup_size.join('×'),
    defines: variant.defines.length > 0 ? variant.defines.join(' · ') : 'no defines',
  };
}

function keepLast<T>(items: T[], max: number): T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

/** The profiler view's data: fed by the backend's events, live or replayed. */
export class ProfilerState {
  replies = $state<ReplyRecord[]>([]);
  throughput = $state<ThroughputPoint[]>([]);
  windows = $state<TokenWindow[]>([]);
  steps = $state<StepSample[]>([]);
  summary = $state<ProfileSummary | null>(null);
  adapter = $state<AdapterFacts | null>(null);
  memory = $state<MemoryView | null>(null);
  watching = $state(false);

  /** The latest reply's time to first token. */
  readonly ttftMs = $derived(this.replies.findLast((reply) => reply.ttftMs !== null)?.ttftMs ?? null);
  readonly generating = $derived(this.replies.some((reply) => !reply.finished));
  /** Decode ms per token, over the token windows, each weighted by its tokens. */
  readonly msPerToken = $derived.by(() => {
    const ms = this.windows.map((w) => w.spanMs / w.count);
    const weights = this.windows.map((w) => w.count);
    return { p50: percentile(ms, 50, weights), p90: percentile(ms, 90, weights) };
  });

  /** Tokens per second over time: decode and prefill columns. */
  readonly throughputColumns = $derived.by((): ChartColumns => {
    const points = [...this.throughput].sort((a, b) => a.atMs - b.atMs);
    const column = (phase: StepPhase) => points.map((p) => (p.phase === phase ? p.tokensPerSecond : null));
    return [points.map((p) => p.atMs / 1000), column('decode'), column('prefill')];
  });

  /** The kinds the sampled decode steps ran, in `KERNEL_KINDS` order. */
  readonly decodeKinds = $derived(
    KERNEL_KINDS.filter((kind) => this.steps.some((s) => s.phase === 'decode' && s.kinds.some((k) => k.kind === kind))),
  );

  /** GPU ms per token of each sampled decode step over time, one column per kind. */
  readonly kindColumns = $derived.by((): ChartColumns => {
    const decode = this.steps.filter((s) => s.phase === 'decode');
    const columns = this.decodeKinds.map((kind) =>
      decode.map((s) => s.kinds.find((k) => k.kind === kind)?.msPerToken ?? 0),
    );
    return [decode.map((s) => s.atMs / 1000), ...columns];
  });

  apply(event: ProfilerEvent) {
    switch (event.type) {
      case 'replyStarted':
        // The backend starts a new log for another model: so does the view.
        if (this.replies.length > 0 && this.replies[this.replies.length - 1].modelId !== event.modelId) this.clear();
        this.replies.push({ replyId: event.replyId, modelId: event.modelId, ttftMs: null, finished: false });
        break;
      case 'firstToken':
        this.#reply(event.replyId, (reply) => (reply.ttftMs = event.ttftMs));
        break;
      case 'tokens':
        if (event.count === 0 || event.spanMs <= 0) break;
        this.windows = keepLast([...this.windows, { count: event.count, spanMs: event.spanMs }], MAX_POINTS);
        this.#point({ atMs: event.atMs, phase: 'decode', tokensPerSecond: (event.count * 1000) / event.spanMs });
        break;
      case 'step':
        this.steps = keepLast([...this.steps, event.step], MAX_POINTS);
        this.summary = event.summary;
        break;
      case 'replyFinished':
        this.#reply(event.replyId, (reply) => {
          reply.finished = true;
          reply.ttftMs = event.timing.ttftMs;
        });
        if (event.timing.prefillTokensPerSecond > 0) {
          this.#point({ atMs: event.atMs, phase: 'prefill', tokensPerSecond: event.timing.prefillTokensPerSecond });
        }
        break;
    }
  }

  clear() {
    this.replies = [];
    this.throughput = [];
    this.windows = [];
    this.steps = [];
    this.summary = null;
  }

  /** Starts following the backend: replays what it kept, then listens. */
  async watch() {
    try {
      const backlog = await profilerApi.watch((event) => {
        this.apply(event);
        // A reply that ends changes nothing of the device, but a model load may have happened.
        if (event.type === 'replyStarted' || event.type === 'replyFinished') void this.refreshDevice();
      });
      this.clear();
      backlog.forEach((event) => this.apply(event));
      this.watching = true;
    } catch (error) {
      toasts.show('error', 'The profiler could not start', errorMessage(error));
    }
    await this.refreshDevice();
  }

  async refreshDevice() {
    try {
      [this.adapter, this.memory] = await Promise.all([profilerApi.adapterFacts(), profilerApi.memory()]);
    } catch (error) {
      toasts.show('error', 'Could not read the GPU', errorMessage(error));
    }
  }

  async export(format: ExportFormat) {
    try {
      if (await profilerApi.exportProfile(format)) toasts.show('info', 'Profile exported');
    } catch (error) {
      toasts.show('error', 'The profile could not be exported', errorMessage(error));
    }
  }

  #reply(replyId: number, update: (reply: ReplyRecord) => void) {
    const reply = this.replies.find((r) => r.replyId === replyId);
    if (reply) update(reply);
  }

  #point(point: ThroughputPoint) {
    this.throughput = keepLast([...this.throughput, point], MAX_POINTS);
  }
}

export const profiler = new ProfilerState();
