// The auditor's own copies of the pinned GGUFs (issue 43 item 4): each file's SHA-256 checked against its alias's pin
// before anything runs, loaded on CPU at its first job and kept while jobs come, unloaded after an idle spell. CPU, so
// that anyone re-checking on the same build and settings gets the same figures bit for bit.
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import type { ModelStore } from "../models/store.ts";
import { rescore, type Rescored, type RescoreSettings } from "../engine/rescore.ts";
import type { GenerateRequest } from "../engine/turn.ts";

/** How long a model stays loaded after its last job. */
export const REFERENCE_IDLE_MS = 5 * 60_000;

export class ReferenceModels {
  private llama: Promise<Llama> | undefined;
  private readonly loaded = new Map<string, Promise<LlamaModel>>();
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ModelStore,
    readonly aliases: readonly string[],
    private readonly log: (line: string) => void,
    private readonly idleMs = REFERENCE_IDLE_MS,
  ) {}

  /** Checks every alias's file against its pin; throws the store's ModelFileError, naming both hashes, on the first that fails. */
  async verify(): Promise<void> {
    for (const alias of this.aliases) await this.store.verify(alias);
  }

  /** One job, on the alias's model; throws an Error whose message says why it could not be scored. */
  async score(alias: string, request: GenerateRequest, tokens: readonly number[], settings: RescoreSettings): Promise<Rescored> {
    if (!this.aliases.includes(alias)) throw new Error(`this rescorer holds no model for ${alias} (it holds ${this.aliases.join(", ")})`);
    clearTimeout(this.idle);
    try {
      return await rescore(await this.model(alias), request, tokens, settings);
    } finally {
      this.idle = setTimeout(() => void this.unload(), this.idleMs);
      this.idle.unref();
    }
  }

  private model(alias: string): Promise<LlamaModel> {
    let model = this.loaded.get(alias);
    if (model === undefined) {
      model = this.open(alias);
      this.loaded.set(alias, model);
      model.catch(() => this.loaded.delete(alias));
    }
    return model;
  }

  private async open(alias: string): Promise<LlamaModel> {
    // checked again at load: the file may have changed since start
    const { path } = await this.store.verify(alias);
    // llama.cpp's own lines go to stderr: stdout carries results alone
    this.llama ??= getLlama({ gpu: false, logLevel: LlamaLogLevel.warn, logger: (_level, message) => this.log(`llama.cpp: ${message.trimEnd()}`) });
    const model = await (await this.llama).loadModel({ modelPath: path });
    this.log(`loaded ${alias} (${path})`);
    return model;
  }

  private async unload(): Promise<void> {
    const models = [...this.loaded.values()];
    this.loaded.clear();
    for (const model of models) await (await model).dispose();
  }

  async dispose(): Promise<void> {
    clearTimeout(this.idle);
    await this.unload();
    await (await this.llama)?.dispose();
  }
}
