import { api, type AppSettings, type ConversationSettings, type Theme } from '../api';
import { toasts } from './toasts.svelte';

class Settings {
  current = $state<AppSettings | null>(null);

  async load() {
    this.current = await api.appSettings();
    applyTheme(this.current.theme);
  }

  get theme(): Theme {
    return this.current?.theme ?? 'system';
  }

  async setTheme(theme: Theme) {
    applyTheme(theme);
    await this.#save({ theme });
  }

  async setConversationDefaults(conversationDefaults: ConversationSettings) {
    await this.#save({ conversationDefaults });
  }

  async #save(change: Partial<AppSettings>) {
    // Read the stored settings first: the backend also writes them (the last loaded model).
    const stored = await api.appSettings();
    const next = { ...stored, ...change };
    try {
      await api.saveAppSettings(next);
      this.current = next;
    } catch (error) {
      toasts.error('Could not save settings', error);
    }
  }
}

const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
let chosenTheme: Theme = 'system';

/** Sets data-theme to the palette in use; "system" follows the system's preference live. */
function applyTheme(theme: Theme) {
  chosenTheme = theme;
  const dark = theme === 'dark' || (theme === 'system' && systemDark.matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

systemDark.addEventListener('change', () => applyTheme(chosenTheme));

export const settings = new Settings();
