// What the profiler's charts share: the app's palette as the current theme resolves it, and a
// watch on theme changes (a canvas keeps the colors it was drawn with, so charts are rebuilt).

/** The current value of one of the app's CSS variables. */
export function cssColor(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || 'gray';
}

export function currentTheme(): string {
  return document.documentElement.dataset.theme ?? '';
}

/** Calls `onChange` whenever the app switches theme; returns the stop. */
export function watchTheme(onChange: (theme: string) => void): () => void {
  const observer = new MutationObserver(() => onChange(currentTheme()));
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  return () => observer.disconnect();
}

/** Axis styling in the app's muted text and border colors. */
export function axisStyle(title: string) {
  const muted = cssColor('--text-muted');
  const grid = cssColor('--border');
  return {
    title: { display: true, text: title, color: muted },
    ticks: { color: muted, maxTicksLimit: 6 },
    grid: { color: grid },
    border: { color: grid },
  };
}
