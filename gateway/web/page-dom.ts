// The few DOM members the pages' scripts (/verify, /chat) use, as the browser has them: the project type-checks as
// node code (no DOM lib: its fetch and body types clash with node's for every other file).
export interface FileLike {
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface DomEvent {
  preventDefault(): void;
  inputType?: string;
  dataTransfer?: { files: ArrayLike<FileLike>; getData(format: string): string } | null;
}

export interface DomElement {
  id: string;
  hidden: boolean;
  disabled: boolean;
  textContent: string | null;
  value: string;
  files?: ArrayLike<FileLike> | null;
  dataset: Record<string, string | undefined>;
  classList: { add(name: string): void; remove(name: string): void };
  append(...nodes: (DomElement | string)[]): void;
  replaceChildren(...nodes: DomElement[]): void;
  addEventListener(type: string, listener: (event: DomEvent) => void): void;
}

export const { document, location } = globalThis as unknown as {
  document: { getElementById(id: string): DomElement | null; createElement(tag: string): DomElement };
  location: { origin: string };
};

/** The page's element `id`; a page without it is a bug in the page, said at once. */
export function byId(id: string): DomElement {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
}
