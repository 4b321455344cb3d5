// The profiler's commands and events, typed after src-tauri/src/core/profiler/{models,commands}.rs.
import { invoke } from '@tauri-apps/api/core';

import { channel, type MemoryFootprint, type MemoryTier } from './api';

export type StepPhase = 'prefill' | 'decode';

export type KernelKind = 'matmul' | 'attention' | 'norm' | 'embedding' | 'elementwise';

/** The engine's KernelVariant (its Rust field names): what a kernel's pipeline was compiled as. */
export type KernelVariant = {
  shader: string;
  entry: string;
  /** Flags as `NAME`, constants as `NAME=value`, sorted. */
  defines: string[];
  workgroup_size: [number, number, number];
};

export type KernelRow = {
  name: string;
  kind: KernelKind;
  calls: number;
  totalMs: number;
  msPerToken: number;
  share: number;
  /** Weight bytes read over GPU time; null for kernels that read no weights. */
  gigabytesPerSecond: number | null;
  /** The variants its dispatches ran, first seen first (layers of another weight type add one). */
  variants: KernelVariant[];
};

export type KindRow = { kind: KernelKind; msPerToken: number; share: number };

export type LayerRow = { layer: number | null; msPerToken: number; share: number };

export type KernelTable = {
  steps: number;
  tokens: number;
  gpuMsPerToken: number;
  kernels: KernelRow[];
  kinds: KindRow[];
  layers: LayerRow[];
};

export type ProfileSummary = { decode: KernelTable; prefill: KernelTable };

export type StepSample = {
  replyId: number;
  phase: StepPhase;
  position: number;
  tokens: number;
  atMs: number;
  gpuMs: number;
  kinds: KindRow[];
};

export type ReplyTiming = {
  promptTokens: number;
  prefilledTokens: number;
  generatedTokens: number;
  ttftMs: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
};

export type ProfilerEvent =
  | { type: 'replyStarted'; replyId: number; modelId: string; atMs: number }
  | { type: 'firstToken'; replyId: number; atMs: number; ttftMs: number }
  | { type: 'tokens'; replyId: number; atMs: number; count: number; spanMs: number }
  | { type: 'step'; step: StepSample; summary: ProfileSummary }
  | { type: 'replyFinished'; replyId: number; atMs: number; timing: ReplyTiming };

export type AdapterFacts = {
  name: string;
  backend: string;
  deviceType: string;
  driver: string;
  driverInfo: string;
  shaderF16: boolean;
  subgroups: boolean;
  subgroupSizes: [number, number];
  cooperativeMatrix: boolean;
  timestamps: boolean;
  /** Measured by a timed buffer copy: the roofline's ceiling; null where it cannot be timed. */
  peakGigabytesPerSecond: number | null;
  limits: { name: string; value: number }[];
};

/** The engine's GpuMemory (its Rust field names). */
export type GpuMemory = {
  adapter_kind: string;
  memory_kind: string;
  tier: MemoryTier;
  device_total: number | null;
  device_available: number | null;
  host_total: number;
  host_available: number;
  source: string;
  budget: number | null;
};

export type MemoryView = {
  gpu: GpuMemory;
  tierLabel: string;
  models: { modelId: string; contextLen: number; footprint: MemoryFootprint }[];
};

export type ExportFormat = 'json' | 'chromeTrace';

export const profilerApi = {
  /** Streams events from now on; resolves to the kept ones before them. */
  watch: (onEvent: (event: ProfilerEvent) => void) =>
    invoke<ProfilerEvent[]>('watch_profiler', { onEvent: channel(onEvent) }),
  adapterFacts: () => invoke<AdapterFacts | null>('adapter_facts'),
  memory: () => invoke<MemoryView | null>('profiler_memory'),
  exportProfile: (format: ExportFormat) => invoke<boolean>('export_profile', { format }),
};
