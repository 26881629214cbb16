import pkg from "../package.json";
export const version: string = pkg.version;
