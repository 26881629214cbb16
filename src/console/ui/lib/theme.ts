/**
 * Light or dark: the reader's choice once made (kept in localStorage, so every tab and the next
 * visit keep it), else the system's `prefers-color-scheme`, followed as it changes. The stylesheet
 * reads `data-theme` on the root element.
 */
import { useEffect, useState } from "preact/hooks";

export type Theme = "light" | "dark";

const storageKey = "inboxd.console.theme";
const systemDark = matchMedia("(prefers-color-scheme: dark)");

function chosenTheme(): Theme | undefined {
  const stored = localStorage.getItem(storageKey);
  return stored === "light" || stored === "dark" ? stored : undefined;
}

const currentTheme = (): Theme => chosenTheme() ?? (systemDark.matches ? "dark" : "light");

export const applyTheme = () => {
  document.documentElement.dataset.theme = currentTheme();
};

/** The theme shown and a toggle that remembers the other one. */
export function useTheme(): [Theme, () => void] {
  const [theme, setTheme] = useState(currentTheme);
  useEffect(() => {
    const follow = () => (applyTheme(), setTheme(currentTheme()));
    systemDark.addEventListener("change", follow);
    addEventListener("storage", follow);
    return () => {
      systemDark.removeEventListener("change", follow);
      removeEventListener("storage", follow);
    };
  }, []);
  const toggle = () => {
    localStorage.setItem(storageKey, theme === "dark" ? "light" : "dark");
    applyTheme();
    setTheme(currentTheme());
  };
  return [theme, toggle];
}
