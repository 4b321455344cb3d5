import { api, errorMessage, type ContextSetting } from '../api';
import { models } from './models.svelte';
import { toasts } from './toasts.svelte';

/** GPU memory a context setting takes, and whether it fits the budget (null: nothing tells). */
export function contextFit(setting: ContextSetting): { total: number; fits: boolean | null } {
  const { weights, kv_cache, scratch } = setting.footprint;
  const total = weights + kv_cache + scratch;
  return { total, fits: setting.budget === null ? null : total <= setting.budget };
}

/** The active model's context: what it loads with, chosen per model; a change reloads it. */
class ModelContext {
  setting = $state<ContextSetting | null>(null);
  busy = $state(false);

  async refresh(modelId: string | null) {
    if (!modelId) {
      this.setting = null;
      return;
    }
    try {
      this.setting = await api.modelContext(modelId);
    } catch (error) {
      this.setting = null;
      toasts.show('error', `Could not read ${modelId}'s context`, errorMessage(error));
    }
  }

  /** Saves `contextLen` (null: the default) and loads the model again if it holds another. */
  async choose(modelId: string, contextLen: number | null) {
    this.busy = true;
    try {
      const setting = await api.setModelContext(modelId, contextLen);
      this.setting = setting;
      const state = models.installed.find((model) => model.id === modelId)?.state;
      if (state?.state === 'loaded' && state.info.context_len !== setting.contextLen) await models.reload(modelId);
    } catch (error) {
      toasts.show('error', `Could not change ${modelId}'s context`, errorMessage(error));
    } finally {
      this.busy = false;
    }
  }
}

export const modelContext = new ModelContext();
