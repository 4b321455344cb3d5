export type Toast = { id: number; kind: 'error' | 'info'; title: string; detail?: string; sticky: boolean };

const AUTO_DISMISS_MS = 6000;

class Toasts {
  items = $state<Toast[]>([]);
  #next = 1;

  show(kind: Toast['kind'], title: string, detail?: string, sticky = false) {
    const id = this.#next++;
    this.items.push({ id, kind, title, detail, sticky });
    if (!sticky) setTimeout(() => this.dismiss(id), AUTO_DISMISS_MS);
  }

  error(title: string, error?: unknown) {
    this.show('error', title, error === undefined ? undefined : String(error));
  }

  dismiss(id: number) {
    this.items = this.items.filter((toast) => toast.id !== id);
  }
}

export const toasts = new Toasts();
