import { api, errorMessage, type NewRemoteBackend, type RemoteModels, type ServerSettings, type ServerStatus } from '../api';
import { toasts } from './toasts.svelte';

/** A chat model id names a remote model when it holds a `/` (local names never do). */
export function isRemoteModel(modelId: string | null): boolean {
  return modelId !== null && modelId.includes('/');
}

/** Remote backends and their models, for the settings and the model picker. */
class Backends {
  lists = $state<RemoteModels[]>([]);
  refreshing = $state(false);

  async refresh() {
    this.refreshing = true;
    try {
      this.lists = await api.listRemoteModels();
    } catch (error) {
      toasts.show('error', 'Could not list the remote servers', errorMessage(error));
    } finally {
      this.refreshing = false;
    }
  }

  /** Adds a backend; returns the error to show beside the form, or null. */
  async add(backend: NewRemoteBackend): Promise<string | null> {
    try {
      await api.addRemoteBackend(backend);
    } catch (error) {
      return errorMessage(error);
    }
    await this.refresh();
    return null;
  }

  async remove(backendId: string) {
    try {
      await api.removeRemoteBackend(backendId);
    } catch (error) {
      toasts.show('error', 'Could not remove the server', errorMessage(error));
    }
    await this.refresh();
  }
}

/** The app's own OpenAI-compatible server. */
class LocalServer {
  status = $state<ServerStatus | null>(null);
  busy = $state(false);

  async refresh() {
    try {
      this.status = await api.serverStatus();
    } catch (error) {
      toasts.show('error', 'Could not read the server settings', errorMessage(error));
    }
  }

  /** `apiKey`: null keeps the stored key, '' removes it. */
  async configure(settings: ServerSettings, apiKey: string | null) {
    this.busy = true;
    try {
      this.status = await api.configureServer(settings, apiKey);
    } catch (error) {
      toasts.show('error', 'Could not change the server', errorMessage(error));
      await this.refresh();
    } finally {
      this.busy = false;
    }
  }
}

export const backends = new Backends();
export const localServer = new LocalServer();
