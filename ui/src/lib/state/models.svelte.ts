import { api, errorMessage, type FetchProgress, type InstalledModel, type ModelInfo, type ModelList } from '../api';
import { settings } from './settings.svelte';
import { toasts } from './toasts.svelte';

export type LoadProgress = { fraction: number; stage: string };
export type DownloadState = { modelId: string; progress: FetchProgress | null; error: string | null };

class Models {
  list = $state<ModelList | null>(null);
  /** Why the list could not be read (the model store is unavailable). */
  listError = $state<string | null>(null);
  /** The model replies are generated with. */
  activeId = $state<string | null>(null);
  loading = $state<Record<string, LoadProgress>>({});
  download = $state<DownloadState | null>(null);
  importing = $state(false);

  get installed(): InstalledModel[] {
    return this.list?.installed ?? [];
  }

  get active(): InstalledModel | null {
    return this.installed.find((model) => model.id === this.activeId) ?? null;
  }

  /** The active model's details once it is on the GPU. */
  get activeInfo(): ModelInfo | null {
    const state = this.active?.state;
    return state?.state === 'loaded' ? state.info : null;
  }

  async refresh() {
    try {
      this.list = await api.listModels();
      this.listError = null;
    } catch (error) {
      this.listError = errorMessage(error);
    }
  }

  /**
   * Loads the model used last time, else the smallest installed default, else any; never one
   * in `skip` (the last run stopped while loading it).
   */
  async loadPreferred(skip: string[] = []) {
    const installed = this.installed.filter((model) => !skip.includes(model.id));
    if (installed.length === 0) return;
    const last = settings.current?.lastModelId;
    const preferred =
      installed.find((model) => model.id === last) ??
      [...installed].filter((model) => model.isDefault).sort((a, b) => a.fileSize - b.fileSize)[0] ??
      installed[0];
    await this.load(preferred.id);
  }

  /** Loads a model and makes it the active one; a failure is shown on its row with its reason. */
  async load(modelId: string) {
    this.activeId = modelId;
    this.loading[modelId] = { fraction: 0, stage: 'waiting' };
    try {
      await api.loadModel(modelId, (event) => {
        if (event.type === 'progress') this.loading[modelId] = { fraction: event.fraction, stage: event.stage };
        else {
          delete this.loading[modelId];
          if (event.type === 'failed') toasts.show('error', `Could not load ${modelId}`, event.reason);
          void this.refresh();
        }
      });
      await this.refresh();
    } catch (error) {
      delete this.loading[modelId];
      toasts.show('error', `Could not load ${modelId}`, errorMessage(error));
    }
  }

  /** Loads a model again (with the context its settings give it now), keeping it the active one. */
  async reload(modelId: string) {
    try {
      await api.unloadModel(modelId);
    } catch (error) {
      toasts.show('error', `Could not unload ${modelId}`, errorMessage(error));
      return;
    }
    await this.load(modelId);
  }

  async unload(modelId: string) {
    try {
      await api.unloadModel(modelId);
      if (this.activeId === modelId) this.activeId = null;
    } catch (error) {
      toasts.show('error', `Could not unload ${modelId}`, errorMessage(error));
    }
    await this.refresh();
  }

  /** Downloads a default model, then loads it. */
  async fetchDefault(modelId: string) {
    this.download = { modelId, progress: null, error: null };
    try {
      await api.fetchDefaultModel(modelId, (progress) => {
        if (this.download) this.download.progress = progress;
      });
      // The list knows the model before the download state clears, so the first-run screen
      // never sees "nothing installed, nothing downloading" and starts again.
      await this.refresh();
      this.download = null;
      await this.load(modelId);
    } catch (error) {
      this.download = { modelId, progress: null, error: errorMessage(error) };
    }
  }

  async importFile() {
    this.importing = true;
    try {
      const modelId = await api.importModelFile();
      if (modelId) {
        await this.refresh();
        toasts.show('info', 'Model added', modelId);
      }
    } catch (error) {
      toasts.show('error', 'Could not add the model', errorMessage(error));
    } finally {
      this.importing = false;
    }
  }

  async remove(modelId: string) {
    try {
      await api.removeModel(modelId);
    } catch (error) {
      toasts.show('error', `Could not remove ${modelId}`, errorMessage(error));
    }
    await this.refresh();
  }
}

export const models = new Models();
