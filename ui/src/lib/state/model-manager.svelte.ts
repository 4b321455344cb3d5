// The model manager: Hub search, a repository's quantizations with fit badges, the downloads
// list (kept by the app across restarts, changes pushed over a channel), conversions of
// safetensors repositories to RDRR (kept and pushed the same way) and recommendations.
import {
  api,
  errorMessage,
  type Conversion,
  type Download,
  type Fit,
  type HubModel,
  type ModelFormat,
  type Recommendation,
  type RepoView,
} from '../api';
import { models } from './models.svelte';
import { toasts } from './toasts.svelte';

export function fitLabel(fit: Fit | null): string {
  switch (fit) {
    case 'fits':
      return 'Fits';
    case 'tight':
      return 'Tight';
    case 'too-big':
      return 'Too big';
    default:
      return 'Unknown';
  }
}

/** What opening a search result leads to: a GGUF repository's files to download, else the
 * conversion of its safetensors model. */
export function resultAction(model: HubModel): 'Download' | 'Convert' {
  return model.formats.includes('gguf') || !model.formats.includes('safetensors') ? 'Download' : 'Convert';
}

export function formatLabel(format: ModelFormat): string {
  return format === 'gguf' ? 'GGUF' : 'safetensors';
}

/** Whether `text` names a Hub repository (`owner/name`), which can be opened without a search. */
export function isRepoId(text: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(text.trim());
}

/** Seconds left as people say it: `45 s`, `3 min`, `1 h 20 min`. */
export function formatEta(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '';
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Whether a conversion is downloading or converting (it can be cancelled, not resumed). */
export function isConverting(conversion: Conversion | undefined): boolean {
  return conversion?.status === 'downloading' || conversion?.status === 'converting';
}

/** A download or a conversion: a job that ends with a model installed, or failed. */
type Job = { id: number; status: string; modelId: string | null; message: string | null };

/** Puts `job` in `list` in place of its earlier state. When it has just finished, the models
 * list is read again (the model can be loaded); a new end is told in a toast if `announce`. */
function takeChange<T extends Job>(
  list: T[],
  job: T,
  announce: boolean,
  words: { installed: string; failed: string; name: string },
) {
  const index = list.findIndex((known) => known.id === job.id);
  const before = index >= 0 ? list[index] : null;
  if (index >= 0) list[index] = job;
  else list.push(job);
  if (job.status === 'done' && before?.status !== 'done') {
    void models.refresh();
    if (announce) toasts.show('info', words.installed, job.modelId ?? words.name);
  } else if (announce && job.status === 'failed' && before?.status !== 'failed') {
    toasts.show('error', words.failed, job.message ?? '');
  }
}

class ModelManager {
  query = $state('');
  results = $state<HubModel[] | null>(null);
  searching = $state(false);
  searchError = $state<string | null>(null);

  repo = $state<RepoView | null>(null);
  repoLoading = $state<string | null>(null);
  repoError = $state<string | null>(null);

  downloads = $state<Download[]>([]);
  conversions = $state<Conversion[]>([]);
  /** null until asked; empty when the Hub is unreachable. */
  recommendations = $state<Recommendation[] | null>(null);
  private watching = false;
  private watchingConversions = false;
  private searchSeq = 0;

  /** Starts receiving download changes (once) and takes the list as the app has it. */
  async watch() {
    if (this.watching) return;
    this.watching = true;
    try {
      const list = await api.watchDownloads((download) => this.apply(download));
      for (const download of list) this.apply(download, false);
    } catch (error) {
      this.watching = false;
      toasts.show('error', 'Could not read the downloads', errorMessage(error));
    }
  }

  /** Takes a change of one download; a newly installed model joins the models list. */
  apply(download: Download, announce = true) {
    takeChange(this.downloads, download, announce, {
      installed: 'Model installed',
      failed: `Downloading ${download.label} failed`,
      name: download.label,
    });
  }

  /** Starts receiving conversion changes (once) and takes the list as the app has it. */
  async watchConversions() {
    if (this.watchingConversions) return;
    this.watchingConversions = true;
    try {
      const list = await api.watchConversions((conversion) => this.applyConversion(conversion));
      for (const conversion of list) this.applyConversion(conversion, false);
    } catch (error) {
      this.watchingConversions = false;
      toasts.show('error', 'Could not read the conversions', errorMessage(error));
    }
  }

  /** Takes a change of one conversion; a converted model joins the models list. */
  applyConversion(conversion: Conversion, announce = true) {
    takeChange(this.conversions, conversion, announce, {
      installed: 'Model converted',
      failed: `Converting ${conversion.repo} failed`,
      name: conversion.repo,
    });
  }

  /** The latest conversion of `repo`, if any. */
  conversionOf(repo: string): Conversion | undefined {
    return this.conversions.findLast((conversion) => conversion.repo === repo);
  }

  async convert(repo: string, quant: string) {
    try {
      const started = await api.startConversion(repo, quant);
      // A cancelled or failed conversion of the same repository and type gives way to it.
      this.conversions = this.conversions.filter(
        (c) => c.id === started.id || c.repo !== repo || c.quant !== started.quant || c.status === 'done',
      );
      this.applyConversion(started, false);
    } catch (error) {
      toasts.show('error', `Could not convert ${repo}`, errorMessage(error));
    }
  }

  /** Goes on with a cancelled or failed conversion from the files it downloaded. */
  async resumeConversion(id: number) {
    try {
      this.applyConversion(await api.resumeConversion(id), false);
    } catch (error) {
      toasts.show('error', 'Could not resume the conversion', errorMessage(error));
    }
  }

  /** Takes an ended conversion off the list. */
  async dismissConversion(id: number) {
    try {
      await api.dismissConversion(id);
      this.conversions = this.conversions.filter((conversion) => conversion.id !== id);
    } catch (error) {
      toasts.show('error', 'Could not clear the conversion', errorMessage(error));
    }
  }

  /** Asks a running conversion to stop; its `cancelled` state comes over the channel. */
  async cancelConversion(id: number) {
    try {
      await api.cancelConversion(id);
    } catch (error) {
      toasts.show('error', 'Could not cancel the conversion', errorMessage(error));
    }
  }

  async search(query = this.query) {
    const trimmed = query.trim();
    if (trimmed === '') return;
    const seq = ++this.searchSeq;
    this.searching = true;
    this.searchError = null;
    try {
      const results = await api.searchModels(trimmed);
      if (seq === this.searchSeq) this.results = results;
    } catch (error) {
      if (seq === this.searchSeq) this.searchError = errorMessage(error);
    } finally {
      if (seq === this.searchSeq) this.searching = false;
    }
  }

  async openRepo(repo: string) {
    this.repoLoading = repo;
    this.repoError = null;
    try {
      this.repo = await api.repoFiles(repo);
    } catch (error) {
      this.repoError = errorMessage(error);
    } finally {
      this.repoLoading = null;
    }
  }

  closeRepo() {
    this.repo = null;
    this.repoError = null;
  }

  /** The listed download of a repository's model, if there is one. */
  downloadOf(repo: string, choice: string): Download | undefined {
    return this.downloads.find((download) => download.repo === repo && download.choice === choice);
  }

  /** The download of a repository's model that stands: not failed, and if done, its model is
   * still installed. Without one, the model can be downloaded (again). */
  liveDownloadOf(repo: string, choice: string): Download | undefined {
    const download = this.downloadOf(repo, choice);
    if (download?.status === 'failed') return undefined;
    if (download?.status === 'done' && !models.installed.some((model) => model.id === download.modelId)) return undefined;
    return download;
  }

  async start(repo: string, choice: string) {
    try {
      const started = await api.startDownload(repo, choice);
      // A failed download of the same model gives way to the new one.
      this.downloads = this.downloads.filter((d) => d.id === started.id || d.repo !== repo || d.choice !== choice);
      this.apply(started, false);
    } catch (error) {
      toasts.show('error', `Could not download ${choice}`, errorMessage(error));
    }
  }

  async pause(id: number) {
    await this.act('pause', () => api.pauseDownload(id));
  }

  async resume(id: number) {
    await this.act('resume', () => api.resumeDownload(id));
  }

  /** Stops a download and deletes its partial files, or clears a finished one. */
  async cancel(id: number) {
    try {
      await api.cancelDownload(id);
      this.downloads = this.downloads.filter((download) => download.id !== id);
    } catch (error) {
      toasts.show('error', 'Could not cancel the download', errorMessage(error));
    }
  }

  async loadRecommendations() {
    if (this.recommendations !== null) return;
    try {
      this.recommendations = await api.recommendedModels();
    } catch {
      // Offline or no store: the pinned default model is the way in.
      this.recommendations = [];
    }
  }

  private async act(verb: string, call: () => Promise<Download>) {
    try {
      this.apply(await call(), false);
    } catch (error) {
      toasts.show('error', `Could not ${verb} the download`, errorMessage(error));
    }
  }
}

export const modelManager = new ModelManager();
