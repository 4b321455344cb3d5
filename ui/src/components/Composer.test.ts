import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';

import Composer from './Composer.svelte';

describe('Composer', () => {
  it('sends on Enter and keeps Shift+Enter for new lines', async () => {
    const onSend = vi.fn(async () => true);
    render(Composer, { busy: false, placeholder: 'Message', onSend, onStop: vi.fn() });
    const input = screen.getByTestId('composer-input') as HTMLTextAreaElement;
    await fireEvent.input(input, { target: { value: 'line one' } });
    await fireEvent.keyDown(input, { key: 'Enter', shiftKey: true });
    expect(onSend).not.toHaveBeenCalled();
    await fireEvent.keyDown(input, { key: 'Enter' });
    expect(onSend).toHaveBeenCalledWith('line one');
    expect(input.value).toBe('');
  });

  it('gives the text back when sending fails', async () => {
    const onSend = vi.fn(async () => false);
    render(Composer, { busy: false, placeholder: 'Message', onSend, onStop: vi.fn() });
    const input = screen.getByTestId('composer-input') as HTMLTextAreaElement;
    await fireEvent.input(input, { target: { value: 'keep me' } });
    await fireEvent.click(screen.getByTestId('send-button'));
    await vi.waitFor(() => expect(input.value).toBe('keep me'));
  });

  it('does not send blank text', async () => {
    const onSend = vi.fn(async () => true);
    render(Composer, { busy: false, placeholder: 'Message', onSend, onStop: vi.fn() });
    await fireEvent.input(screen.getByTestId('composer-input'), { target: { value: '   ' } });
    expect((screen.getByTestId('send-button') as HTMLButtonElement).disabled).toBe(true);
  });

  it('offers stop while a reply is on its way, also on Escape', async () => {
    const onStop = vi.fn();
    render(Composer, { busy: true, placeholder: 'Message', onSend: vi.fn(), onStop });
    expect(screen.queryByTestId('send-button')).toBeNull();
    await fireEvent.click(screen.getByTestId('stop-button'));
    await fireEvent.keyDown(screen.getByTestId('composer-input'), { key: 'Escape' });
    expect(onStop).toHaveBeenCalledTimes(2);
  });
});
