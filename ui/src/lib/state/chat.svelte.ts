import {
  api,
  errorMessage,
  type ConversationSettings,
  type ConversationSummary,
  type ConversationView,
  type GenerationEvent,
} from '../api';
import { applyEvent, isOutcome, pendingReply, type PendingReply } from '../pending-reply';
import { models } from './models.svelte';
import { toasts } from './toasts.svelte';

export type ReplyFailure = { reason: string; contextFull: boolean };

class Chat {
  conversations = $state<ConversationSummary[]>([]);
  query = $state('');
  /** null: a new chat not saved yet (it is created by its first message). */
  currentId = $state<number | null>(null);
  view = $state<ConversationView | null>(null);
  /** Replies on their way, by conversation. */
  pending = $state<Record<number, PendingReply>>({});
  /** The last failed reply, by conversation, until the next attempt. */
  failures = $state<Record<number, ReplyFailure>>({});
  #stopRequested = new Set<number>();

  get currentPending(): PendingReply | null {
    return this.currentId === null ? null : (this.pending[this.currentId] ?? null);
  }

  async refreshList() {
    try {
      this.conversations = await api.listConversations(this.query || undefined);
    } catch (error) {
      toasts.error('Could not list conversations', errorMessage(error));
    }
  }

  async open(id: number) {
    try {
      this.view = await api.getConversation(id);
      this.currentId = id;
    } catch (error) {
      toasts.error('Could not open the conversation', errorMessage(error));
    }
  }

  newChat() {
    this.currentId = null;
    this.view = null;
  }

  async reload() {
    if (this.currentId !== null) this.view = await api.getConversation(this.currentId);
  }

  async send(content: string): Promise<boolean> {
    const modelId = this.#modelOrComplain();
    if (!modelId) return false;
    try {
      if (this.currentId === null) {
        const conversation = await api.createConversation();
        this.currentId = conversation.id;
        this.view = { conversation, thread: [] };
      }
      const conversationId = this.currentId;
      this.#begin(conversationId, -1);
      const receipt = await api.sendMessage(conversationId, content, modelId, this.#listener(conversationId));
      this.#started(conversationId, receipt.message.id, receipt.generationId);
      await Promise.all([this.reload(), this.refreshList()]);
      return true;
    } catch (error) {
      if (this.currentId !== null) delete this.pending[this.currentId];
      toasts.error('Could not send the message', errorMessage(error));
      return false;
    }
  }

  /** A new reply to the user message `userMessageId`, beside the ones it has. */
  async regenerate(userMessageId: number) {
    const modelId = this.#modelOrComplain();
    if (!modelId || this.currentId === null) return;
    const conversationId = this.currentId;
    this.#begin(conversationId, userMessageId);
    try {
      const generationId = await api.regenerateReply(conversationId, userMessageId, modelId, this.#listener(conversationId));
      this.#started(conversationId, userMessageId, generationId);
    } catch (error) {
      delete this.pending[conversationId];
      toasts.error('Could not regenerate the reply', errorMessage(error));
    }
  }

  /** Sends an edited copy of a user message on a new branch. */
  async editAndResend(messageId: number, content: string) {
    const modelId = this.#modelOrComplain();
    if (!modelId || this.currentId === null) return;
    const conversationId = this.currentId;
    this.#begin(conversationId, -1);
    try {
      const receipt = await api.editAndResend(conversationId, messageId, content, modelId, this.#listener(conversationId));
      this.#started(conversationId, receipt.message.id, receipt.generationId);
      await this.reload();
    } catch (error) {
      delete this.pending[conversationId];
      toasts.error('Could not send the edit', errorMessage(error));
    }
  }

  async stop() {
    const reply = this.currentPending;
    if (!reply) return;
    if (reply.generationId === null) this.#stopRequested.add(reply.conversationId);
    else await api.stopGeneration(reply.generationId);
  }

  async selectBranch(messageId: number) {
    if (this.currentId === null) return;
    try {
      this.view = await api.selectBranch(this.currentId, messageId);
    } catch (error) {
      toasts.error('Could not switch branches', errorMessage(error));
    }
  }

  async rename(id: number, title: string) {
    try {
      const conversation = await api.renameConversation(id, title);
      if (this.view?.conversation.id === id) this.view.conversation = conversation;
      await this.refreshList();
    } catch (error) {
      toasts.error('Could not rename the conversation', errorMessage(error));
    }
  }

  async remove(id: number) {
    const reply = this.pending[id];
    if (reply?.generationId != null) await api.stopGeneration(reply.generationId);
    try {
      await api.deleteConversation(id);
      if (this.currentId === id) this.newChat();
      await this.refreshList();
    } catch (error) {
      toasts.error('Could not delete the conversation', errorMessage(error));
    }
  }

  async updateSettings(settings: ConversationSettings) {
    if (this.currentId === null || !this.view) return;
    try {
      this.view.conversation = await api.updateConversationSettings(this.currentId, settings);
    } catch (error) {
      toasts.error('Could not save the settings', errorMessage(error));
    }
  }

  async exportCurrent() {
    if (this.currentId === null) return;
    try {
      if (await api.exportConversation(this.currentId)) toasts.show('info', 'Conversation exported');
    } catch (error) {
      toasts.error('Could not export the conversation', errorMessage(error));
    }
  }

  #modelOrComplain(): string | null {
    if (models.activeId) return models.activeId;
    toasts.show('error', 'No model is loaded', 'Pick a model in the model menu at the top.');
    return null;
  }

  #begin(conversationId: number, parentId: number) {
    delete this.failures[conversationId];
    this.pending[conversationId] = pendingReply(conversationId, parentId);
  }

  /** The reply now has its id and its user message; a stop clicked meanwhile is sent now. */
  #started(conversationId: number, parentId: number, generationId: number) {
    const reply = this.pending[conversationId];
    if (!reply) return;
    reply.generationId = generationId;
    reply.parentId = parentId;
    if (this.#stopRequested.delete(conversationId)) void api.stopGeneration(generationId);
  }

  #listener(conversationId: number) {
    return async (event: GenerationEvent) => {
      const reply = this.pending[conversationId];
      if (!reply) return;
      const next = applyEvent(reply, event, performance.now());
      if (!isOutcome(next)) {
        this.pending[conversationId] = next;
        return;
      }
      if (next.kind === 'failed') this.failures[conversationId] = { reason: next.reason, contextFull: next.contextFull };
      // The saved reply replaces the streamed one in place: load it before dropping the stream.
      try {
        if (this.currentId === conversationId) await this.reload();
      } finally {
        delete this.pending[conversationId];
      }
      void this.refreshList();
    };
  }
}

export const chat = new Chat();
