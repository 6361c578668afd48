; Inno Setup script: Windows installer around the one-folder bundle (dist\preflight).
;
; Build on Windows (docs/INSTALLER.md; installer\windows\build_windows.ps1 does all steps):
;   iscc /DAppVersion=<version from pyproject.toml> installer\windows\preflight.iss
; Output: dist\Preflight-<version>-setup.exe
;
; NOT BUILT OR TESTED in this repository's CI (Linux only): these steps are documented, not
; verified. See docs/INSTALLER.md.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=X.Y.Z installer\windows\preflight.iss
#endif

[Setup]
AppId={{6C1F7B0E-3D52-4A4B-9E43-0C6B1C2F9A71}
AppName=Preflight
AppVersion={#AppVersion}
AppPublisher=Preflight maintainers
AppComments=Sanitize a document before a cloud LLM sees it
DefaultDirName={autopf}\Preflight
DefaultGroupName=Preflight
DisableProgramGroupPage=yes
; Per-user install by default (no admin rights); the user may choose all users.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=Preflight-{#AppVersion}-setup
SetupIconFile=..\..\build\icons\preflight.ico
UninstallDisplayIcon={app}\preflight-gui.exe
UninstallDisplayName=Preflight {#AppVersion}
Compression=lzma2/fast
SolidCompression=yes
; The bundle (runtime + models) is ~1.5 GB; a single setup.exe must stay below 2 GB.
DiskSpanning=no
WizardStyle=modern
LicenseFile=..\..\installer\windows\LICENSE.txt

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\..\dist\preflight\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Preflight"; Filename: "{app}\preflight-gui.exe"; Comment: "Sanitize a document before a cloud LLM sees it"
Name: "{autodesktop}\Preflight"; Filename: "{app}\preflight-gui.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\preflight-gui.exe"; Description: "{cm:LaunchProgram,Preflight}"; Flags: nowait postinstall skipifsilent

; Nothing under [UninstallDelete]: settings, vaults and the audit log in
; %LOCALAPPDATA%\Preflight belong to the user and are never deleted by the uninstaller.

[Code]
{ API keys live in Windows Credential Manager. The uninstaller runs as the user who
  installed (per-user install), so it can remove them: it asks, and forgets them unless the
  user keeps them. A silent uninstall forgets them unless /KEEPKEYS is given. The audit log
  is never deleted; the message says where it stays. }
function InitializeUninstall(): Boolean;
var
  ResultCode: Integer;
  Forget: Boolean;
begin
  Result := True;
  if UninstallSilent() then
    Forget := Pos('/KEEPKEYS', UpperCase(GetCmdTail())) = 0
  else
    Forget := MsgBox('Delete the API keys Preflight stored in Windows Credential Manager?' + #13#10 + #13#10 +
      'Choose No to keep them. Your settings and the audit log of what you sent stay in ' +
      ExpandConstant('{localappdata}') + '\Preflight either way; delete that folder ' +
      'yourself if you want them gone.',
      mbConfirmation, MB_YESNO) = IDYES;
  if Forget then
    Exec(ExpandConstant('{app}\preflight.exe'), 'forget-keys', '', SW_HIDE, ewWaitUntilTerminated, ResultCode);
end;
