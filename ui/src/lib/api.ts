// The app's commands, typed after their Rust signatures (src-tauri/src/core/*/commands.rs).
import { Channel, invoke } from '@tauri-apps/api/core';

export type ConversationSettings = {
  systemPrompt: string;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repetitionPenalty: number;
  /** null: a fresh seed for every reply. */
  seed: number | null;
  maxTokens: number;
};

export type Conversation = {
  id: number;
  title: string;
  createdAt: number;
  updatedAt: number;
  settings: ConversationSettings;
  modelId: string | null;
  currentLeafId: number | null;
};

export type ConversationSummary = { id: number; title: string; updatedAt: number; snippet: string | null };

export type FinishReason =
  | 'eos'
  | 'max_tokens'
  | 'stop_string'
  | 'cancelled'
  | 'context_full'
  | 'failed'
  | 'interrupted';

export type GenerationStats = {
  modelId: string;
  finishReason: FinishReason;
  promptTokens: number;
  generatedTokens: number;
  tokensPerSecond: number;
  timeToFirstTokenMs: number;
};

export type Role = 'user' | 'assistant';

export type Message = {
  id: number;
  conversationId: number;
  parentId: number | null;
  role: Role;
  content: string;
  createdAt: number;
  generation: GenerationStats | null;
};

export type ThreadMessage = Message & { siblingIds: number[] };

export type ConversationView = { conversation: Conversation; thread: ThreadMessage[] };

export type GenerationEvent =
  | { type: 'queued'; ahead: number }
  | { type: 'started' }
  | { type: 'token'; text: string }
  | { type: 'done'; message: Message }
  | { type: 'cancelled' }
  | { type: 'failed'; reason: string; contextFull: boolean };

export type SendReceipt = { message: Message; generationId: number };

/** The engine's ModelInfo (serialized with its Rust field names). */
export type ModelInfo = {
  name: string;
  architecture: string;
  quantization: string;
  file_size: number;
  weight_bytes: number;
  context_len: number;
  n_layers: number;
  vocab_size: number;
};

export type ModelState =
  | { state: 'queued' }
  | { state: 'loading'; fraction: number; stage: string }
  | { state: 'loaded'; info: ModelInfo }
  | { state: 'failed'; reason: string }
  | { state: 'unloading' };

export type InstalledModel = {
  id: string;
  architecture: string | null;
  quantization: string | null;
  fileSize: number;
  isDefault: boolean;
  state: ModelState | null;
};

export type DefaultModel = { id: string; fileSize: number };

export type ModelList = { installed: InstalledModel[]; availableDefaults: DefaultModel[] };

export type LoadEvent =
  | { type: 'progress'; fraction: number; stage: string }
  | { type: 'loaded'; info: ModelInfo }
  | { type: 'failed'; reason: string }
  | { type: 'cancelled' };

export type FetchProgress = { stage: string; written: number; total: number };

export type Theme = 'system' | 'light' | 'dark';

export type AppSettings = {
  theme: Theme;
  lastModelId: string | null;
  conversationDefaults: ConversationSettings;
  /** The context each model loads with, by model id, where one was chosen. */
  modelContexts: Record<string, number>;
};

export type StartupNotice =
  | { kind: 'databaseRecovered'; movedTo: string; reason: string }
  | { kind: 'modelStoreUnavailable'; reason: string }
  | { kind: 'modelsCrashedLoading'; modelIds: string[] };

export type AppStatus = { version: string; databasePath: string; notices: StartupNotice[] };

/** `conversationId` for a reply in the app, `requestId` for a request to its server. */
export type QueuedGeneration = { generationId: number; conversationId?: number; requestId?: string };
export type QueueView = { running: QueuedGeneration | null; waiting: QueuedGeneration[] };

/** A search result of the Hugging Face Hub. */
/** What a Hub repository holds: GGUF files to download, or a safetensors model to convert. */
export type ModelFormat = 'gguf' | 'safetensors';
export type HubModel = { id: string; downloads: number | null; likes: number | null; formats: ModelFormat[] };

export type Fit = 'fits' | 'tight' | 'too-big';
export type MemoryTier = 'dedicated-large' | 'dedicated-small' | 'unified' | 'cpu';
/** What a model takes on the GPU (the engine's snake_case). */
export type MemoryFootprint = { weights: number; kv_cache: number; scratch: number };

/** A model's context setting: what its loads use, the bounds from its metadata, the memory it takes. */
export type ContextSetting = {
  modelId: string;
  contextLen: number;
  /** null: the default. */
  chosen: number | null;
  defaultLen: number;
  minLen: number;
  maxLen: number;
  footprint: MemoryFootprint;
  budget: number | null;
};

/** A repository's GGUF model with its estimated footprint (the store crate's snake_case). */
export type AssessedChoice = {
  quantization: string | null;
  name: string;
  files: { path: string; size: number; sha256: string | null }[];
  size: number;
  footprint: MemoryFootprint;
  fit: Fit | null;
  recommended: boolean;
};

export type MachineMemory = { budget: number | null; tier: MemoryTier | null; kvF16: boolean };
export type RepoView = {
  repo: string;
  memory: MachineMemory;
  contextLen: number;
  choices: AssessedChoice[];
  /** The repository holds a safetensors model that converts to RDRR. */
  convertible: boolean;
};
export type Recommendation = { title: string; repo: string; choice: AssessedChoice };

export type DownloadStatus = 'downloading' | 'paused' | 'installing' | 'done' | 'failed';
export type Download = {
  id: number;
  repo: string;
  revision: string;
  choice: string;
  label: string;
  total: number;
  done: number;
  bytesPerSecond: number;
  etaSeconds: number | null;
  status: DownloadStatus;
  modelId: string | null;
  message: string | null;
};

/** The weight types a conversion offers (the store takes Q6_K too). */
export const CONVERT_QUANTS = ['Q4_K_M', 'Q8_0', 'F16'] as const;
export type ConversionStatus = 'downloading' | 'converting' | 'done' | 'failed' | 'cancelled';
/** A Hub repository being converted to RDRR: `done` of `total` bytes of the current step. */
export type Conversion = {
  id: number;
  repo: string;
  quant: string;
  status: ConversionStatus;
  done: number;
  total: number;
  modelId: string | null;
  message: string | null;
};

/** An OpenAI-compatible server the user added; its key stays in the OS keychain. */
export type RemoteBackend = { id: string; name: string; baseUrl: string; hasApiKey: boolean };
export type NewRemoteBackend = { name: string; baseUrl: string; apiKey: string | null };
/** A backend's models as chat model ids (`backendId/model`), or why they could not be listed. */
export type RemoteModels = { backend: RemoteBackend; modelIds: string[]; error: string | null };

export type ServerSettings = { enabled: boolean; host: string; port: number };
export type ServerStatus = {
  settings: ServerSettings;
  hasApiKey: boolean;
  /** The base URL OpenAI clients take, while the server runs. */
  url: string | null;
  modelId: string | null;
  error: string | null;
};

export function channel<T>(onMessage: (message: T) => void): Channel<T> {
  const ch = new Channel<T>();
  ch.onmessage = onMessage;
  return ch;
}

export const api = {
  appStatus: () => invoke<AppStatus>('app_status'),
  appSettings: () => invoke<AppSettings>('app_settings'),
  saveAppSettings: (settings: AppSettings) => invoke<void>('save_app_settings', { settings }),
  openLink: (url: string) => invoke<void>('open_link', { url }),

  listConversations: (query?: string) => invoke<ConversationSummary[]>('list_conversations', { query: query ?? null }),
  createConversation: () => invoke<Conversation>('create_conversation'),
  getConversation: (id: number) => invoke<ConversationView>('get_conversation', { id }),
  renameConversation: (id: number, title: string) => invoke<Conversation>('rename_conversation', { id, title }),
  deleteConversation: (id: number) => invoke<void>('delete_conversation', { id }),
  updateConversationSettings: (id: number, settings: ConversationSettings) =>
    invoke<Conversation>('update_conversation_settings', { id, settings }),
  selectBranch: (conversationId: number, messageId: number) =>
    invoke<ConversationView>('select_branch', { conversationId, messageId }),
  exportConversation: (id: number) => invoke<boolean>('export_conversation', { id }),

  sendMessage: (conversationId: number, content: string, modelId: string, onEvent: (e: GenerationEvent) => void) =>
    invoke<SendReceipt>('send_message', { conversationId, content, modelId, onEvent: channel(onEvent) }),
  regenerateReply: (conversationId: number, userMessageId: number, modelId: string, onEvent: (e: GenerationEvent) => void) =>
    invoke<number>('regenerate_reply', { conversationId, userMessageId, modelId, onEvent: channel(onEvent) }),
  editAndResend: (
    conversationId: number,
    messageId: number,
    content: string,
    modelId: string,
    onEvent: (e: GenerationEvent) => void,
  ) => invoke<SendReceipt>('edit_and_resend', { conversationId, messageId, content, modelId, onEvent: channel(onEvent) }),
  stopGeneration: (generationId: number) => invoke<boolean>('stop_generation', { generationId }),
  generationQueue: () => invoke<QueueView>('generation_queue'),

  listModels: () => invoke<ModelList>('list_models'),
  loadModel: (modelId: string, onEvent: (e: LoadEvent) => void) => invoke<void>('load_model', { modelId, onEvent: channel(onEvent) }),
  unloadModel: (modelId: string) => invoke<void>('unload_model', { modelId }),
  modelContext: (modelId: string) => invoke<ContextSetting>('model_context', { modelId }),
  setModelContext: (modelId: string, contextLen: number | null) =>
    invoke<ContextSetting>('set_model_context', { modelId, contextLen }),
  fetchDefaultModel: (modelId: string, onProgress: (p: FetchProgress) => void) =>
    invoke<void>('fetch_default_model', { modelId, onProgress: channel(onProgress) }),
  importModelFile: () => invoke<string | null>('import_model_file'),
  removeModel: (modelId: string) => invoke<void>('remove_model', { modelId }),

  searchModels: (query: string) => invoke<HubModel[]>('search_models', { query }),
  repoFiles: (repo: string) => invoke<RepoView>('repo_files', { repo }),
  recommendedModels: () => invoke<Recommendation[]>('recommended_models'),
  watchDownloads: (onChange: (download: Download) => void) => invoke<Download[]>('watch_downloads', { onChange: channel(onChange) }),
  startDownload: (repo: string, choice: string) => invoke<Download>('start_download', { repo, choice }),
  pauseDownload: (id: number) => invoke<Download>('pause_download', { id }),
  resumeDownload: (id: number) => invoke<Download>('resume_download', { id }),
  cancelDownload: (id: number) => invoke<void>('cancel_download', { id }),
  watchConversions: (onChange: (conversion: Conversion) => void) =>
    invoke<Conversion[]>('watch_conversions', { onChange: channel(onChange) }),
  startConversion: (repo: string, quant: string) => invoke<Conversion>('start_conversion', { repo, quant }),
  cancelConversion: (id: number) => invoke<void>('cancel_conversion', { id }),
  resumeConversion: (id: number) => invoke<Conversion>('resume_conversion', { id }),
  dismissConversion: (id: number) => invoke<void>('dismiss_conversion', { id }),
  listRemoteBackends: () => invoke<RemoteBackend[]>('list_remote_backends'),
  addRemoteBackend: (backend: NewRemoteBackend) => invoke<RemoteBackend>('add_remote_backend', { backend }),
  removeRemoteBackend: (backendId: string) => invoke<void>('remove_remote_backend', { backendId }),
  listRemoteModels: () => invoke<RemoteModels[]>('list_remote_models'),

  serverStatus: () => invoke<ServerStatus>('server_status'),
  /** `apiKey`: null keeps the stored key, '' removes it. */
  configureServer: (settings: ServerSettings, apiKey: string | null) =>
    invoke<ServerStatus>('configure_server', { settings, apiKey }),
};

/** A failed command's message (commands reject with the error's text). */
export function errorMessage(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return String(error);
}
