// How many tokens one session may hold (`svc-agent start --context-size`): here, apart from the engine, so the
// command line can name the bounds without loading llama.cpp.

/** Tokens of prompt and answer one session may hold, unless the model was trained on fewer. */
export const DEFAULT_CONTEXT_SIZE = 8192;
/** The smallest `--context-size`: below it no chat prompt with its template fits. */
export const MIN_CONTEXT_SIZE = 512;
