// A request an ecosystem mount refuses, with the status its clients should see; rendered in the
// ecosystem's own error shape (npm JSON, Go text, Hub JSON).
export class MountError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}
